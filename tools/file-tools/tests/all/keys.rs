//! Key material: rows K1–K3 of `docs/regressions.md`, cases C12 and C13, and the look-back
//! rules of `docs/keys.md`. Every key here is a fixed fake body.

use sluice_file_tools::{
    Context, ErrorKind, GrepFilesArgs, KeyNames, Limits, ListDirArgs, ReadFileArgs, Root, Roots,
    TailFileArgs, ToolError, grep_files, list_dir, read_file, tail_file,
};

use crate::support::{CAP, Fixture, assert_fits, fake_key_body, fake_pem, follow_grep, obs};

fn read(ctx: &Context, path: &str) -> Result<sluice_file_tools::ReadFilePage, ToolError> {
    read_file(
        ctx,
        &ReadFileArgs {
            path: path.into(),
            ..Default::default()
        },
    )
}

fn tail(
    ctx: &Context,
    path: &str,
    lines: Option<u64>,
) -> Result<sluice_file_tools::TailFilePage, ToolError> {
    tail_file(
        ctx,
        &TailFileArgs {
            path: path.into(),
            lines,
            ..Default::default()
        },
    )
}

#[track_caller]
fn assert_key_refusal<T: std::fmt::Debug>(result: Result<T, ToolError>, path: &str) -> String {
    let err = result.expect_err("refused");
    assert_eq!(err.kind, ErrorKind::KeyMaterial, "{}", err.message);
    assert!(
        err.message
            .starts_with(&format!("refusing to read key material: {path}")),
        "{}",
        err.message
    );
    err.message
}

#[test]
fn k1_key_names_at_any_depth() {
    let fx = Fixture::new();
    let denied = [
        "a.pem",
        "X.PEM",
        "sub/b.key",
        "deep/er/id_ed25519",
        "id_rsa",
        "deep/ID_ECDSA",
        "c.p12",
        "d.pfx",
        "keys/x",
        ".ssh/config",
        "deep/er/.ssh/known_hosts",
        "deep/ssh/notes.txt",
        "sub/Keys/y.txt",
    ];
    for p in denied {
        fx.write(p, "secret line\n");
    }
    fx.write("ok.txt", "secret ok\n");
    fx.write("id_ed25519.pub", "secret pub\n");
    fx.write("monkeys/z.txt", "secret monkey\n");
    let ctx = fx.ctx(CAP);
    for p in denied {
        assert_key_refusal(read(&ctx, p), p);
        assert_key_refusal(tail(&ctx, p, None), p);
        let grep = grep_files(
            &ctx,
            &GrepFilesArgs {
                pattern: "secret".into(),
                path: Some(p.into()),
                ..Default::default()
            },
        );
        assert_eq!(grep.unwrap_err().kind, ErrorKind::KeyMaterial, "{p}");
    }
    assert!(read(&ctx, "id_ed25519.pub").is_ok());

    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            pattern: "secret".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let paths: Vec<&str> = page.results.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(paths, ["id_ed25519.pub", "monkeys/z.txt", "ok.txt"]);
    // Denied file names are counted; files in key directories are pruned with them.
    assert_eq!(page.skipped_files, 8);

    // list_dir lists key names, never refuses them.
    let names = |path: Option<&str>| -> Vec<String> {
        list_dir(
            &ctx,
            &ListDirArgs {
                path: path.map(str::to_string),
                ..Default::default()
            },
        )
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.name)
        .collect()
    };
    let root = names(None);
    for n in [".ssh", "X.PEM", "a.pem", "c.p12", "d.pfx", "id_rsa", "keys"] {
        assert!(root.contains(&n.to_string()), "{n} in {root:?}");
    }
    assert_eq!(names(Some("keys")), ["x"]);
    assert_eq!(names(Some(".ssh")), ["config"]);
}

#[test]
fn k1_configurable_deny_list() {
    let fx = Fixture::new();
    fx.write("a.pem", "fine here\n");
    fx.write("vault/s.txt", "secret\n");
    fx.write("x.secret", "secret\n");
    let mut ctx = fx.ctx(CAP);
    ctx.keys = std::sync::Arc::new(KeyNames::new(&["*.secret", "vault/"]).unwrap());
    assert!(read(&ctx, "a.pem").is_ok());
    assert_key_refusal(read(&ctx, "vault/s.txt"), "vault/s.txt");
    assert_key_refusal(read(&ctx, "X.SECRET"), "X.SECRET");
    assert!(KeyNames::new(&["a["]).is_err());
}

#[test]
fn k2_inline_pkcs8_block_in_yaml() {
    let fx = Fixture::new();
    let body = fake_key_body(6);
    let indented: String = body.lines().map(|l| format!("    {l}\n")).collect();
    let yaml = format!(
        "server:\n  port: 8080\ntls:\n  key: |\n    -----BEGIN PRIVATE KEY-----\n{indented}    -----END PRIVATE KEY-----\nname: demo\n"
    );
    fx.write("app/config.yaml", &yaml);
    fx.write("app/other.yaml", "name: other\nport: 9090\n");
    let ctx = fx.ctx(CAP);
    let msg = assert_key_refusal(read(&ctx, "app/config.yaml"), "app/config.yaml");
    assert!(!msg.contains(body.lines().next().unwrap()));
    // A page before the block is fine; a page starting in the body is refused.
    let head = read_file(
        &ctx,
        &ReadFileArgs {
            path: "app/config.yaml".into(),
            line_count: Some(4),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(head.content, "server:\n  port: 8080\ntls:\n  key: |\n");
    let msg = assert_key_refusal(
        read_file(
            &ctx,
            &ReadFileArgs {
                path: "app/config.yaml".into(),
                start_line: Some(7),
                line_count: Some(1),
                ..Default::default()
            },
        ),
        "app/config.yaml",
    );
    assert!(msg.contains("at that position"), "{msg}");

    for path in [None, Some("app".to_string())] {
        let pages = follow_grep(
            &ctx,
            &GrepFilesArgs {
                pattern: "e".into(),
                path,
                ..Default::default()
            },
        );
        assert!(pages[0].count > 0);
        for m in pages.iter().flat_map(|p| &p.results) {
            assert_eq!(m.path, "app/other.yaml");
        }
        assert_eq!(pages[0].skipped_files, 1);
    }
}

#[test]
fn k3_tail_around_a_pem_block() {
    let fx = Fixture::new();
    fx.write(
        "f.txt",
        format!("start\n{}line a\nline b\n", fake_pem("RSA ", 10)),
    );
    let ctx = fx.ctx(CAP);
    let msg = assert_key_refusal(tail(&ctx, "f.txt", Some(3)), "f.txt");
    assert!(msg.contains("holds a PEM private key"), "{msg}");
    let page = tail(&ctx, "f.txt", Some(2)).unwrap();
    assert_eq!(page.lines, ["line a", "line b"]);
    assert!(!page.truncated);

    let body = fake_key_body(2);
    fx.write(
        "g.txt",
        format!("start\n-----BEGIN EC PRIVATE KEY-----\n{body}"),
    );
    for lines in [Some(1), Some(2), None] {
        let msg = assert_key_refusal(tail(&ctx, "g.txt", lines), "g.txt");
        assert!(msg.contains("ends inside a PEM private key"), "{msg}");
    }

    let body = fake_key_body(40 * 1024 / 65 + 1);
    assert!(body.len() >= 40 * 1024);
    fx.write("h.txt", format!("-----BEGIN PRIVATE KEY-----\n{body}"));
    let msg = assert_key_refusal(tail(&ctx, "h.txt", Some(1)), "h.txt");
    assert!(msg.contains("ends inside a PEM private key"), "{msg}");
}

#[test]
fn c12_env_file_with_an_embedded_key() {
    let fx = Fixture::new();
    let body = fake_key_body(3);
    let env = format!(
        "API_KEY=sk-test-000\nTLS_KEY=\"-----BEGIN EC PRIVATE KEY-----\n{body}-----END EC PRIVATE KEY-----\"\n"
    );
    fx.write(".env", &env);
    let ctx = fx.ctx(CAP);
    let body_lines: Vec<&str> = body.lines().collect();
    let observations = [
        obs(&read(&ctx, ".env")),
        obs(&tail(&ctx, ".env", Some(3))),
        obs(&tail(&ctx, ".env", Some(1))),
        obs(&read_file(
            &ctx,
            &ReadFileArgs {
                path: ".env".into(),
                start_line: Some(3),
                ..Default::default()
            },
        )),
        obs(&grep_files(
            &ctx,
            &GrepFilesArgs {
                pattern: "KEY".into(),
                ..Default::default()
            },
        )),
        obs(&grep_files(
            &ctx,
            &GrepFilesArgs {
                pattern: "KEY".into(),
                path: Some(".env".into()),
                ..Default::default()
            },
        )),
    ];
    for o in &observations {
        for l in &body_lines {
            assert!(!o.contains(l), "{o}");
        }
        assert!(!o.contains("BEGIN EC"), "{o}");
    }
    for o in &observations[..4] {
        assert!(o.contains("refusing to read key material: .env"), "{o}");
        assert!(o.contains("\"kind\":\"key-material\""), "{o}");
    }
    // grep skips the file and says so.
    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            pattern: "KEY".into(),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!((page.count, page.skipped_files), (0, 1));
    // The plain API_KEY line alone is not key material.
    let page = read_file(
        &ctx,
        &ReadFileArgs {
            path: ".env".into(),
            line_count: Some(1),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(page.content, "API_KEY=sk-test-000\n");
}

#[test]
fn c13_key_directory_refused_every_way() {
    let fx = Fixture::new();
    // The OpenSSH header `openssh-key-v1\0` in base64, then a fixed fake body.
    let key = format!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n{}-----END OPENSSH PRIVATE KEY-----\n",
        fake_key_body(4)
    );
    assert!((350..=450).contains(&key.len()), "{}", key.len());
    fx.write("keys/deploy_key", &key);
    fx.write("README.md", "deploy with keys/deploy_key\n");
    let ctx = fx.ctx(CAP);
    let path = "keys/deploy_key";
    let answers = [
        read(&ctx, path).unwrap_err(),
        read_file(
            &ctx,
            &ReadFileArgs {
                path: path.into(),
                start_line: Some(3),
                ..Default::default()
            },
        )
        .unwrap_err(),
        read_file(
            &ctx,
            &ReadFileArgs {
                path: path.into(),
                offset: Some(100),
                ..Default::default()
            },
        )
        .unwrap_err(),
        tail(&ctx, path, None).unwrap_err(),
        tail(&ctx, path, Some(1)).unwrap_err(),
    ];
    for a in &answers {
        assert_eq!(a, &answers[0]);
    }
    assert_eq!(answers[0].kind, ErrorKind::KeyMaterial);
    assert_eq!(
        answers[0].message,
        "refusing to read key material: keys/deploy_key"
    );
    let err = grep_files(
        &ctx,
        &GrepFilesArgs {
            pattern: "AAAA".into(),
            path: Some("keys".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::KeyMaterial);
    assert_eq!(err.message, "refusing to read key material: keys");
    // Over the whole root the key directory is pruned.
    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            pattern: "AAAA|deploy".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let paths: Vec<&str> = page.results.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(paths, ["README.md"]);
}

#[test]
fn symlinks_to_key_material_are_refused_by_their_resolved_name() {
    let fx = Fixture::new();
    fx.write("id_rsa", "fake\n");
    fx.write(".ssh/config", "Host x\n");
    fx.write("keys/x", "fake\n");
    fx.symlink("id_rsa", "notes.txt");
    fx.symlink(".ssh", "cfg");
    fx.symlink("../keys/x", "sub/link.txt");
    let ctx = fx.ctx(CAP);
    assert_key_refusal(read(&ctx, "notes.txt"), "notes.txt");
    assert_key_refusal(tail(&ctx, "notes.txt", None), "notes.txt");
    assert_key_refusal(read(&ctx, "cfg/config"), "cfg/config");
    assert_key_refusal(read(&ctx, "sub/link.txt"), "sub/link.txt");
    let err = grep_files(
        &ctx,
        &GrepFilesArgs {
            pattern: "x".into(),
            path: Some("cfg".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::KeyMaterial);
}

/// A file: `-----BEGIN PRIVATE KEY-----`, `lines` fake body lines of 65 bytes, the END line.
fn big_key(lines: usize) -> String {
    format!(
        "-----BEGIN PRIVATE KEY-----\n{}-----END PRIVATE KEY-----\nafter the key\n",
        fake_key_body(lines)
    )
}

const BEGIN_LEN: u64 = 28;

#[test]
fn read_deep_inside_a_long_key_fails_closed() {
    let fx = Fixture::new();
    let lines = 200 * 1024 / 65;
    fx.write("k.txt", big_key(lines));
    let ctx = fx.ctx(2048);
    let at = |line: usize, count: Option<u64>| {
        read_file(
            &ctx,
            &ReadFileArgs {
                path: "k.txt".into(),
                offset: Some(BEGIN_LEN + 65 * line as u64),
                line_count: count,
                ..Default::default()
            },
        )
    };
    // Within 128 KiB of the BEGIN: the last armor before the start is a BEGIN.
    let msg = assert_key_refusal(at(100, Some(2)), "k.txt");
    assert!(msg.contains("at that position"), "{msg}");
    // Further in, the look-back is only key-body lines: fail closed.
    let msg = assert_key_refusal(at(2500, Some(2)), "k.txt");
    assert!(msg.contains("key-body lines"), "{msg}");
    // The END just after the page does not clear it.
    let msg = assert_key_refusal(at(lines - 5, Some(2)), "k.txt");
    assert!(msg.contains("key-body lines"), "{msg}");
    // A page holding the END line is refused.
    assert_key_refusal(at(lines - 2, None), "k.txt");
    // After the END: fine.
    let page = read_file(
        &ctx,
        &ReadFileArgs {
            path: "k.txt".into(),
            offset: Some(BEGIN_LEN + 65 * lines as u64 + 26),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(page.content, "after the key\n");
}

#[test]
fn ordinary_text_in_the_look_back_clears_it() {
    let fx = Fixture::new();
    // 200 KiB of base64-looking lines without armor, with one ordinary line in the middle.
    let body = fake_key_body(200 * 1024 / 65);
    let (a, b) = body.split_at(65 * 1500);
    fx.write("blob.txt", format!("{a}this is ordinary text\n{b}"));
    fx.write("pure.txt", &body);
    let ctx = fx.ctx(2048);
    let read_at = |path: &str, offset: u64| {
        read_file(
            &ctx,
            &ReadFileArgs {
                path: path.into(),
                offset: Some(offset),
                line_count: Some(1),
                ..Default::default()
            },
        )
    };
    // The ordinary line is within 128 KiB before the start.
    assert!(read_at("blob.txt", 65 * 2500 + 22).is_ok());
    // Only key-body lines for 128 KiB, never reaching the start of the file: refused.
    assert_key_refusal(read_at("pure.txt", 65 * 2500), "pure.txt");
    // The look-back reaches the start of the file: no fail-closed.
    assert!(read_at("pure.txt", 65 * 1000).is_ok());
    // tail_file applies the same rule to its window.
    let msg = assert_key_refusal(tail(&ctx, "pure.txt", Some(2)), "pure.txt");
    assert!(msg.contains("key-body lines"), "{msg}");
    assert!(tail(&ctx, "blob.txt", Some(2)).is_ok());
}

#[test]
fn a_page_cutting_an_armor_line_is_refused() {
    let fx = Fixture::new();
    // The page (512 escaped bytes at cap 1024) ends inside the BEGIN line.
    let text = format!("{}-----BEGIN RSA PRIVATE KEY-----\n", "x".repeat(500));
    fx.write("cut.txt", &text);
    let ctx = Context::new(
        Roots::new(vec![Root::new("w", fx.root())]),
        Limits::new(1024),
    );
    let result = read(&ctx, "cut.txt");
    assert_fits(&result, 1024);
    assert_key_refusal(result, "cut.txt");
    // Certificates and public keys are not key material.
    fx.write(
        "cert.pem.txt",
        format!(
            "-----BEGIN CERTIFICATE-----\n{}-----END CERTIFICATE-----\n-----BEGIN PUBLIC KEY-----\n",
            fake_key_body(3)
        ),
    );
    assert!(read(&ctx, "cert.pem.txt").is_ok());
}
