//! Temp roots, file builders, observation helpers and cursor-following loops shared by the
//! tests.

use std::path::{Path, PathBuf};

use serde::Serialize;
use sluice_file_tools::{
    Context, DirSource, GrepFilesArgs, GrepFilesPage, Limits, ListDirArgs, ListDirPage,
    ReadFileArgs, ReadFilePage, Root, Roots, ToolError, grep_files_from, list_dir, read_file,
};

/// CAP of the cases in `docs/regressions.md`.
pub(crate) const CAP: u32 = 8192;

/// A temporary directory holding the root (`<tmp>/root`) and room beside it for things
/// outside the root (`<tmp>/outside`).
pub(crate) struct Fixture {
    tmp: tempfile::TempDir,
}

impl Fixture {
    /// A fresh fixture. On Linux it lives in `/dev/shm` (tmpfs) when that is writable: the
    /// cases build trees of 20,000–30,000 files, and creating them on a slow disk would
    /// dominate the run time; elsewhere in the default temporary directory.
    pub(crate) fn new() -> Self {
        let shm = Path::new("/dev/shm");
        let tmp = if shm.is_dir() {
            tempfile::Builder::new()
                .prefix("sluice-file-tools-")
                .tempdir_in(shm)
                .or_else(|_| tempfile::tempdir())
        } else {
            tempfile::tempdir()
        }
        .expect("tempdir");
        std::fs::create_dir(tmp.path().join("root")).expect("mkdir root");
        std::fs::create_dir(tmp.path().join("outside")).expect("mkdir outside");
        Fixture { tmp }
    }

    /// The root directory.
    pub(crate) fn root(&self) -> PathBuf {
        self.tmp.path().join("root")
    }

    /// A directory outside the root.
    pub(crate) fn outside(&self) -> PathBuf {
        self.tmp.path().join("outside")
    }

    /// Writes `bytes` at `rel` under the root, creating parent directories.
    pub(crate) fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.root().join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir -p");
        }
        std::fs::write(&p, bytes).expect("write");
        p
    }

    /// Creates the directory `rel` under the root.
    pub(crate) fn mkdir(&self, rel: &str) -> PathBuf {
        let p = self.root().join(rel);
        std::fs::create_dir_all(&p).expect("mkdir -p");
        p
    }

    /// Creates a symlink at `rel` under the root pointing at `target` (taken literally).
    pub(crate) fn symlink(&self, target: impl AsRef<Path>, rel: &str) {
        let p = self.root().join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir -p");
        }
        std::os::unix::fs::symlink(target, p).expect("symlink");
    }

    /// A context over the root with cap `cap` and default key names.
    pub(crate) fn ctx(&self, cap: u32) -> Context {
        Context::new(
            Roots::new(vec![Root::new("work", self.root())]),
            Limits::new(cap),
        )
    }
}

/// `num(n)`: lines `line ` + 14-digit zero-padded number + `\n` for 1..=n.
pub(crate) fn num(n: u64) -> String {
    let mut s = String::with_capacity(n as usize * 20);
    for i in 1..=n {
        s.push_str(&format!("line {i:014}\n"));
    }
    s
}

/// The observation the host stores for a successful result.
pub(crate) fn ok_obs<T: Serialize>(result: &T) -> String {
    format!(
        "{{\"ok\":true,\"result\":{}}}",
        serde_json::to_string(result).expect("serialise")
    )
}

/// The observation the host stores for a tool error.
pub(crate) fn err_obs(err: &ToolError) -> String {
    format!(
        "{{\"ok\":false,\"error\":{},\"kind\":\"{}\"}}",
        serde_json::to_string(&err.message).expect("serialise"),
        err.kind.as_str()
    )
}

/// The observation of `result`, either way.
pub(crate) fn obs<T: Serialize>(result: &Result<T, ToolError>) -> String {
    match result {
        Ok(r) => ok_obs(r),
        Err(e) => err_obs(e),
    }
}

/// Asserts that the observation of `result` is at most `cap` bytes.
#[track_caller]
pub(crate) fn assert_fits<T: Serialize>(result: &Result<T, ToolError>, cap: u32) {
    let o = obs(result);
    assert!(
        o.len() <= cap as usize,
        "observation of {} bytes exceeds cap {cap}: {}",
        o.len(),
        &o[..o.len().min(300)]
    );
}

/// The escaped size of `s` as serde_json writes it (without quotes).
pub(crate) fn escaped(s: &str) -> usize {
    serde_json::to_string(s).expect("serialise").len() - 2
}

/// Reads `path` from the start and follows `nextOffset`/`nextLine` to EOF, asserting every
/// observation fits `cap` and that each page starts where the previous one said.
pub(crate) fn follow_read(ctx: &Context, path: &str, line_count: Option<u64>) -> Vec<ReadFilePage> {
    let cap = ctx.limits.max_result_bytes;
    let mut pages: Vec<ReadFilePage> = Vec::new();
    let mut args = ReadFileArgs {
        path: path.into(),
        line_count,
        ..Default::default()
    };
    loop {
        let result = read_file(ctx, &args);
        assert_fits(&result, cap);
        let page = result.unwrap_or_else(|e| panic!("read_file {args:?}: {e}"));
        if let Some(o) = args.offset {
            assert_eq!(page.offset, o, "page starts where the cursor said");
        }
        let next = page.next_offset;
        let next_line = page.next_line;
        if let Some(n) = next {
            assert!(n > page.offset, "the cursor moves forward");
        }
        pages.push(page);
        match next {
            None => break,
            Some(o) => {
                args.offset = Some(o);
                args.start_line = next_line;
            }
        }
        assert!(pages.len() < 1_000_000, "runaway paging");
    }
    pages
}

/// Lists `path` from entry 0 following `nextOffset`, asserting every observation fits.
pub(crate) fn follow_list(ctx: &Context, path: Option<&str>) -> Vec<ListDirPage> {
    let cap = ctx.limits.max_result_bytes;
    let mut pages = Vec::new();
    let mut args = ListDirArgs {
        path: path.map(str::to_string),
        ..Default::default()
    };
    loop {
        let result = list_dir(ctx, &args);
        assert_fits(&result, cap);
        let page = result.unwrap_or_else(|e| panic!("list_dir {args:?}: {e}"));
        assert_eq!(page.offset, args.offset.unwrap_or(0));
        let next = page.next_offset;
        pages.push(page);
        match next {
            None => break,
            Some(o) => {
                assert!(o > args.offset.unwrap_or(0), "the cursor moves forward");
                args.offset = Some(o);
            }
        }
        assert!(pages.len() < 1_000_000, "runaway paging");
    }
    pages
}

/// Runs `args` and follows `nextCursor` until the search is complete, asserting every
/// observation fits and every cursor is at most 64 bytes.
pub(crate) fn follow_grep(ctx: &Context, args: &GrepFilesArgs) -> Vec<GrepFilesPage> {
    follow_grep_from(ctx, args, None)
}

/// [`follow_grep`] with the walk listing directories through `source`.
pub(crate) fn follow_grep_from(
    ctx: &Context,
    args: &GrepFilesArgs,
    source: Option<&dyn DirSource>,
) -> Vec<GrepFilesPage> {
    let cap = ctx.limits.max_result_bytes;
    let mut pages = Vec::new();
    let mut args = args.clone();
    loop {
        let result = grep_files_from(ctx, &args, source);
        assert_fits(&result, cap);
        let page = result.unwrap_or_else(|e| panic!("grep_files {args:?}: {e}"));
        assert_eq!(page.count, page.results.len() as u64);
        let next = page.next_cursor.clone();
        assert_eq!(
            page.truncated,
            next.is_some(),
            "a cursor exactly when truncated"
        );
        pages.push(page);
        match next {
            None => break,
            Some(c) => {
                assert!(c.len() <= 64, "cursor {c:?} is longer than 64 bytes");
                args.cursor = Some(c);
            }
        }
        assert!(pages.len() < 100_000, "runaway paging");
    }
    pages
}

/// A fixed, fake base64 key body: `lines` lines of 64 characters (never a real key).
pub(crate) fn fake_key_body(lines: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for i in 0..lines {
        for j in 0..64 {
            s.push(ALPHABET[(i * 7 + j * 13) % 64] as char);
        }
        s.push('\n');
    }
    s
}

/// A fake PEM private key of `kind` (`RSA `, `EC `, `` for PKCS#8, `OPENSSH `) with
/// `lines` body lines.
pub(crate) fn fake_pem(kind: &str, lines: usize) -> String {
    format!(
        "-----BEGIN {kind}PRIVATE KEY-----\n{}-----END {kind}PRIVATE KEY-----\n",
        fake_key_body(lines)
    )
}

/// A deterministic pseudo-random byte stream (xorshift), for fixtures.
pub(crate) fn pseudo_random_bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.max(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}
