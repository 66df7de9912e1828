//! The project templates, embedded: `host/sluice-kit/templates/{common,rust,python,js,c}/`.
//! Each language's table lists every file of its project (but the WIT the host implements,
//! which [`sluice_builtins::wit`] writes) as (path in the project, text); [`render`] fills in
//! the placeholders.

use crate::Language;

/// A file of a template: its path in the project (`/`-separated) and its text, with
/// placeholders.
pub type TemplateFile = (&'static str, &'static str);

/// The files every language shares.
const COMMON: [TemplateFile; 5] = [
    ("tool.toml", include_str!("../templates/common/tool.toml")),
    (
        "sluice.toml",
        include_str!("../templates/common/sluice.toml"),
    ),
    ("tests.toml", include_str!("../templates/common/tests.toml")),
    // A scripted model's turns, to drive the tool in `sluice run --model replay:replay.jsonl`.
    (
        "replay.jsonl",
        include_str!("../templates/common/replay.jsonl"),
    ),
    (
        "sample/notes.txt",
        include_str!("../templates/common/sample/notes.txt"),
    ),
];

/// The world every language but JavaScript builds.
const WORLD: TemplateFile = (
    "wit/world.wit",
    include_str!("../templates/common/wit/world.wit"),
);

const RUST: [TemplateFile; 7] = [
    WORLD,
    ("Cargo.toml", include_str!("../templates/rust/Cargo.toml")),
    // The lock of guest-examples/rust-head: wit-bindgen 0.63.0 and what it needs.
    ("Cargo.lock", include_str!("../templates/rust/Cargo.lock")),
    ("src/lib.rs", include_str!("../templates/rust/src/lib.rs")),
    ("build.sh", include_str!("../templates/rust/build.sh")),
    (".gitignore", include_str!("../templates/rust/gitignore")),
    ("README.md", include_str!("../templates/rust/README.md")),
];

const PYTHON: [TemplateFile; 5] = [
    WORLD,
    ("app.py", include_str!("../templates/python/app.py")),
    ("build.sh", include_str!("../templates/python/build.sh")),
    (".gitignore", include_str!("../templates/python/gitignore")),
    ("README.md", include_str!("../templates/python/README.md")),
];

const JS: [TemplateFile; 7] = [
    // It also imports the WASI filesystem: componentize-js has no `fs`.
    (
        "wit/world.wit",
        include_str!("../templates/js/wit/world.wit"),
    ),
    ("package.json", include_str!("../templates/js/package.json")),
    // The lock of guest-examples/js-head: componentize-js 0.23.0 and what it needs.
    (
        "package-lock.json",
        include_str!("../templates/js/package-lock.json"),
    ),
    ("tool.js", include_str!("../templates/js/tool.js")),
    ("build.sh", include_str!("../templates/js/build.sh")),
    (".gitignore", include_str!("../templates/js/gitignore")),
    ("README.md", include_str!("../templates/js/README.md")),
];

const C: [TemplateFile; 5] = [
    WORLD,
    ("tool.c", include_str!("../templates/c/tool.c")),
    ("build.sh", include_str!("../templates/c/build.sh")),
    (".gitignore", include_str!("../templates/c/gitignore")),
    ("README.md", include_str!("../templates/c/README.md")),
];

/// Every template file of `language`'s project, sorted by path: its own files, and the
/// common ones it does not replace.
pub fn template_files(language: Language) -> Vec<TemplateFile> {
    let own: &[TemplateFile] = match language {
        Language::Rust => &RUST,
        Language::Python => &PYTHON,
        Language::Js => &JS,
        Language::C => &C,
    };
    let mut files: Vec<TemplateFile> = own.to_vec();
    files.extend(
        COMMON
            .iter()
            .filter(|(path, _)| !own.iter().any(|(p, _)| p == path)),
    );
    files.sort_by_key(|(path, _)| *path);
    files
}

/// `text` with each `{{key}}` of `vars` replaced by its value; other braces are left as
/// they are.
pub fn render(text: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let (before, from) = rest.split_at(start);
        out.push_str(before);
        let var = vars.iter().find_map(|(key, value)| {
            from.strip_prefix("{{")
                .and_then(|r| r.strip_prefix(key))
                .and_then(|r| r.strip_prefix("}}"))
                .map(|after| (*value, after))
        });
        match var {
            Some((value, after)) => {
                out.push_str(value);
                rest = after;
            }
            None => {
                out.push_str("{{");
                rest = &from[2..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_fills_known_placeholders_only() {
        let vars = [("name", "csv-pager"), ("name_snake", "csv_pager")];
        assert_eq!(
            render("{{name}}/{{name_snake}}.wasm {{other}} {{name", &vars),
            "csv-pager/csv_pager.wasm {{other}} {{name"
        );
        assert_eq!(render("({{name_snake}}_t){0}", &vars), "(csv_pager_t){0}");
    }

    #[test]
    fn every_language_has_one_of_each_file() {
        for language in Language::ALL {
            let files = template_files(language);
            let mut paths: Vec<&str> = files.iter().map(|(p, _)| *p).collect();
            paths.dedup();
            assert_eq!(paths.len(), files.len(), "{language}: a path twice");
            assert!(
                files.iter().all(|(_, text)| !text.is_empty()),
                "{language}: an empty file"
            );
        }
    }
}
