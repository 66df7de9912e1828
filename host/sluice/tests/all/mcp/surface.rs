//! What real clients see of the server beyond the calls: the cap declared to Claude Code, the
//! words a tool search finds, the instructions' length, rmcp's log lines, and backpressure
//! on a client that does not read.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use super::{client, command, root_flag};

#[tokio::test]
async fn every_tool_declares_the_cap_to_claude_code() {
    let dir = tempfile::tempdir().unwrap();
    let root = root_flag(dir.path());
    for (flags, cap) in [
        (vec!["--root", root.as_str()], 65_536),
        (
            vec!["--root", root.as_str(), "--max-tool-result-bytes", "120000"],
            120_000,
        ),
    ] {
        let client = client(&flags).await;
        let tools = client.list_all_tools().await.unwrap();
        assert_eq!(tools.len(), 5);
        for tool in &tools {
            let listed = serde_json::to_value(tool).unwrap();
            assert_eq!(
                listed["_meta"],
                json!({"anthropic/maxResultSizeChars": cap}),
                "{}",
                tool.name
            );
        }
        client.cancel().await.unwrap();
    }
}

/// What Claude Code shows the model of a tool result (docs/mcp.md#clients), as a stub: a
/// text longer than the tool's `_meta["anthropic/maxResultSizeChars"]` (50,000 characters
/// when it declares none; at most 500,000) is saved to a file and the model is shown a preview
/// of its first 2,000 characters.
fn claude_code_shows(text: &str, declared: Option<u64>) -> String {
    let limit = declared.unwrap_or(50_000).min(500_000) as usize;
    if text.chars().count() > limit {
        let preview: String = text.chars().take(2_000).collect();
        format!("[result saved to a file; preview]\n{preview}")
    } else {
        text.to_string()
    }
}

/// Through the stub: at the default cap a result the cap cut reaches the
/// model with its marker, and at cap 120,000 a page of 60,000 bytes reaches it whole; without
/// the declaration both went to a file and the model saw neither the marker nor the end.
#[tokio::test]
async fn claude_code_shows_the_marker_and_the_whole_page_at_the_declared_cap() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.log"), "line of a log\n".repeat(40_000)).unwrap();
    let root = root_flag(dir.path());
    for (cap, tool, args, end) in [
        (
            65_536,
            "run_script",
            json!({"script": "return 'x'.repeat(1000000)"}),
            "Ask for less",
        ),
        (
            120_000,
            "read_file",
            json!({"path": "big.log"}),
            r#"line of a log\n"}}"#,
        ),
    ] {
        let cap_flag = cap.to_string();
        let client = client(&["--root", &root, "--max-tool-result-bytes", &cap_flag]).await;
        let tools = client.list_all_tools().await.unwrap();
        let listed = serde_json::to_value(tools.iter().find(|t| t.name == tool).unwrap()).unwrap();
        let declared = listed["_meta"]["anthropic/maxResultSizeChars"].as_u64();
        assert_eq!(declared, Some(cap));
        let result = super::call(&client, tool, args).await;
        let text = super::text(&result);
        assert!(text.len() > 50_000, "{tool}: {} bytes", text.len());
        assert!(text.contains(end), "{tool}: {}", &text[text.len() - 300..]);
        // With the declaration: the whole observation, marker or page end included.
        assert_eq!(claude_code_shows(text, declared), text);
        // Without it (before): a preview that has lost the end.
        assert!(!claude_code_shows(text, None).contains(end), "{tool}");
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn a_tool_search_finds_each_built_in_by_the_words_people_search() {
    let dir = tempfile::tempdir().unwrap();
    let root = root_flag(dir.path());
    let client = client(&["--root", &root, "--max-tool-result-bytes", "1048576"]).await;
    let words: [(&str, &[&str]); 4] = [
        ("read_file", &["read", "cat", "file", "log"]),
        ("tail_file", &["tail", "log", "last lines"]),
        ("grep_files", &["search", "grep", "directory", "log"]),
        ("list_dir", &["list", "ls", "directory", "folder"]),
    ];
    let tools = client.list_all_tools().await.unwrap();
    for (name, words) in words {
        let tool = tools.iter().find(|t| t.name == name).expect(name);
        let description = tool.description.as_deref().unwrap().to_lowercase();
        for word in words {
            assert!(
                description.contains(word),
                "{name} lacks {word:?}: {description}"
            );
        }
    }
    // Codex keeps 240 characters of the instructions: at the widest cap they fit.
    let instructions = client
        .peer_info()
        .unwrap()
        .instructions
        .clone()
        .expect("instructions");
    assert!(
        instructions.chars().count() <= 240,
        "{} chars: {instructions}",
        instructions.chars().count()
    );
    assert!(
        instructions.contains("at most 1048576 bytes"),
        "{instructions}"
    );
    for word in ["search", "grep", "tail", "ls", "logs"] {
        assert!(instructions.contains(word), "{word}: {instructions}");
    }
    client.cancel().await.unwrap();
}

/// Runs `sluice mcp` over stdio with `SLUICE_LOG=log`, opens a session, lists the tools and
/// cancels a call, then closes stdin; returns what it wrote on stderr.
async fn stderr_of_a_session(log: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "one\n").unwrap();
    let root = root_flag(dir.path());
    let mut child = command(&["--root", &root, "mcp"])
        .env("SLUICE_LOG", log)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stderr = child.stderr.take().unwrap();
    let lines = [
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"grep_files","arguments":{"pattern":"(a+)+$"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user"}}),
        json!({"jsonrpc":"2.0","id":3,"method":"ping"}),
    ];
    for line in lines {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    // Up to the answer to 3 (2 gets none when the cancel came first).
    loop {
        let line = tokio::time::timeout(Duration::from_secs(60), stdout.next_line())
            .await
            .expect("answers in time")
            .unwrap()
            .expect("a line");
        let answer: Value = serde_json::from_str(&line).unwrap();
        if answer["id"] == 3 {
            break;
        }
    }
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("exits after EOF")
        .unwrap();
    assert!(status.success(), "{status}");
    let mut text = String::new();
    stderr.read_to_string(&mut text).await.unwrap();
    text
}

#[tokio::test]
async fn rmcp_logs_only_when_asked_for() {
    let info = stderr_of_a_session("info").await;
    assert!(!info.contains("Service initialized"), "{info}");
    assert!(!info.contains("rmcp"), "{info}");
    // Sluice's own info lines are still there.
    assert!(info.contains("serving MCP"), "{info}");
    // Asked for, rmcp's lines show.
    let asked = stderr_of_a_session("info,rmcp=info").await;
    assert!(asked.contains("Service initialized as server"), "{asked}");
}

/// Resident memory of process `pid`, in KiB (Linux).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// A client that writes requests and never reads: the server stops reading stdin once 64
/// answers wait, its memory stays bounded, and when the client reads, every request it
/// wrote is answered, once.
#[tokio::test]
async fn a_client_that_never_reads_meets_backpressure_then_gets_every_answer() {
    let dir = tempfile::tempdir().unwrap();
    // Each answer is about 60 KB.
    std::fs::write(dir.path().join("big.txt"), "y".repeat(60_000) + "\n").unwrap();
    let root = root_flag(dir.path());
    let mut child = command(&["--root", &root, "mcp", "--write-timeout-ms", "600000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    stdin.write_all(format!("{}\n{}\n",
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"})).as_bytes()).await.unwrap();
    // Write until a write blocks for 3 s: the server stopped reading. 20,000 requests
    // (1.2 GB of answers) is the bound of "never".
    const MOST: u64 = 20_000;
    let mut sent = 0u64;
    while sent < MOST {
        let line = json!({"jsonrpc":"2.0","id":sent + 1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"big.txt"}}}).to_string() + "\n";
        match tokio::time::timeout(Duration::from_secs(3), stdin.write_all(line.as_bytes())).await {
            Ok(written) => {
                written.unwrap();
                sent += 1;
            }
            Err(_) => break,
        }
    }
    assert!(
        sent < MOST,
        "the server read all {MOST} requests without anyone reading its answers"
    );
    let rss = rss_kib(pid);
    // 64 waiting answers of 60 KB, the pipes and the runtime: far under 256 MiB (before the
    // bound, 1.4 GiB after 6 s).
    assert!(
        rss < 256 * 1024,
        "{rss} KiB resident with {sent} requests sent"
    );
    // Now read: every request sent so far is answered, once, while the rest is written.
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        let mut seen = std::collections::BTreeSet::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            let answer: Value = serde_json::from_str(&line).unwrap();
            let id = answer["id"].as_u64().unwrap();
            if id > 0 {
                assert_eq!(
                    answer["result"]["isError"],
                    false,
                    "{}",
                    &line[..line.len().min(300)]
                );
            }
            assert!(seen.insert(id), "answered twice: {id}");
        }
        seen
    });
    drop(stdin);
    let seen = tokio::time::timeout(Duration::from_secs(300), reader)
        .await
        .expect("every answer in time")
        .unwrap();
    // The request being written when the write blocked may have gone in part: it is a
    // last line without `\n`, which is not answered.
    let expected: std::collections::BTreeSet<u64> = (0..=sent).collect();
    assert_eq!(seen, expected, "{sent} sent");
    let status = child.wait().await.unwrap();
    assert!(status.success(), "{status}");
}

/// End to end (docs/mcp.md#annotations): a component with an `http` grant is open-world in
/// `tools/list`; with only GET it stays read-only, with POST it is destructive (and served only
/// under --allow-destructive); the built-ins stay closed-world and read-only.
#[tokio::test]
async fn network_tools_are_listed_open_world_and_destructive_when_they_may_write() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("sluice.toml");
    let wasm = sluice_tests::HTTP_FETCH_WASM;
    for (methods, read_only, destructive) in [
        (r#"["GET"]"#, true, false),
        (r#"["GET", "POST"]"#, false, true),
    ] {
        std::fs::write(
            &conf,
            format!(
                "builtins = [\"read_file\"]\n[tools.net]\ncomponent = {wasm:?}\nhttp = [\"127.0.0.1:9\"]\nhttp_methods = {methods}\n"
            ),
        )
        .unwrap();
        let conf = conf.display().to_string();
        let client = client(&["--config", &conf, "mcp", "--allow-destructive"]).await;
        let tools = client.list_all_tools().await.unwrap();
        let hints = |name: &str| {
            let tool = tools.iter().find(|t| t.name == name).expect(name);
            let a = tool.annotations.as_ref().expect("annotations");
            (a.read_only_hint, a.destructive_hint, a.open_world_hint)
        };
        assert_eq!(
            hints("fetch"),
            (Some(read_only), Some(destructive), Some(true)),
            "{methods}"
        );
        assert_eq!(hints("flood"), hints("fetch"));
        assert_eq!(hints("read_file"), (Some(true), Some(false), Some(false)));
        client.cancel().await.unwrap();
    }
}
