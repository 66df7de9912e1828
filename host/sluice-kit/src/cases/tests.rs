//! The unit tests of [`crate::cases`]: plans read and refused, subsets, each check.

use serde_json::json;

use super::*;

#[test]
fn a_subset_is_every_key_given_and_arrays_element_by_element() {
    let v = json!({"ok": true, "result": {"lines": ["a", "b"], "nextCursor": 4, "path": "x"}});
    let mut at = String::new();
    assert!(contains(&v, &json!({"ok": true}), &mut at));
    assert!(contains(&v, &json!({"result": {"nextCursor": 4}}), &mut at));
    assert!(contains(
        &v,
        &json!({"result": {"lines": ["a", "b"]}}),
        &mut at
    ));
    assert!(!contains(&v, &json!({"result": {"lines": ["a"]}}), &mut at));
    assert_eq!(at, ".result.lines");
    let mut at = String::new();
    assert!(!contains(
        &v,
        &json!({"result": {"nextCursor": 5}}),
        &mut at
    ));
    assert_eq!(at, ".result.nextCursor");
    let mut at = String::new();
    assert!(!contains(&v, &json!({"error": "x"}), &mut at));
    assert_eq!(at, ".error");
}

fn plan(text: &str) -> Result<TestPlan, String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tests.toml");
    std::fs::write(&path, text).unwrap();
    TestPlan::load(dir.path())
        .map_err(|e| e.to_string().replace(&path.display().to_string(), "<file>"))
}

#[test]
fn a_plan_is_read_with_its_defaults_and_refused_by_what_is_wrong() {
    let p = plan("[[case]]\nname = \"a\"\ntool = \"t\"\n").unwrap();
    assert_eq!(p.caps, [65_536]);
    assert_eq!(p.config, None, "no sluice.toml beside it");
    assert_eq!(p.cases[0].args, json!({}));
    assert!(!p.cases[0].must_page);
    let rule = "; it takes `config`, `caps` (each 1024 to 1048576), [roots], [[http]] tables with `url`, `method`, `status`, `headers`, and `body` or `body_file`, and [[case]] tables with `name`, `tool`, `args`, `caps`, `http`, and any of `expect`, `contains`, `snapshot`, `must_page` (docs/authoring.md#tests)";
    assert_eq!(
        plan("caps = [512]\n[[case]]\nname = \"a\"\ntool = \"t\"\n").unwrap_err(),
        format!("<file> is not a valid tests file: cap 512 is not from 1024 to 1048576{rule}")
    );
    assert_eq!(
        plan("caps = [4096]\n").unwrap_err(),
        format!("<file> is not a valid tests file: it has no [[case]]{rule}")
    );
    assert_eq!(
        plan("[[case]]\nname = \"a\"\ntool = \"t\"\n[[case]]\nname = \"a\"\ntool = \"t\"\n")
            .unwrap_err(),
        format!("<file> is not a valid tests file: two cases are named `a`{rule}")
    );
    assert_eq!(
        plan("[[case]]\nname = \"a\"\ntool = \"t\"\nsnapshot = \"../x\"\n").unwrap_err(),
        format!(
            "<file> is not a valid tests file: case `a`: snapshot `../x` is not a plain file name (it goes in snapshots/){rule}"
        )
    );
    let e = plan("[[case]]\nname = \"a\"\ntool = \"t\"\nexpected = 1\n").unwrap_err();
    assert!(e.contains("unknown field `expected`"), "{e}");
}

/// Each check of a case against one observation: exact text, exact JSON, a cut result
/// that must page, a snapshot missing, written by --bless, then matched and differing.
#[test]
fn each_check_fails_with_what_differs_and_bless_writes_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tests.toml"),
        "[[case]]\nname = \"a\"\ntool = \"t\"\nsnapshot = \"first\"\nmust_page = true\nexpect = '{\"ok\":true}'\n",
    )
    .unwrap();
    let plan = TestPlan::load(dir.path()).unwrap();
    let case = &plan.cases[0];
    let (failures, blessed) = check(&plan, case, 4096, r#"{"ok":true}"#, false, true);
    assert_eq!((failures.len(), blessed), (0, true), "{failures:?}");
    let stored = dir.path().join("snapshots/first@4096.txt");
    assert_eq!(std::fs::read_to_string(&stored).unwrap(), "{\"ok\":true}\n");
    assert_eq!(
        check(&plan, case, 4096, r#"{"ok":true}"#, false, false).0,
        Vec::<String>::new()
    );
    // Spaces change the text, not the JSON: the string `expect` and the snapshot see it.
    let (failures, _) = check(&plan, case, 4096, r#"{"ok": true}"#, true, false);
    assert_eq!(failures.len(), 3, "{failures:?}");
    assert!(failures[0].starts_with("the cap (4096 bytes) cut the result: it must page"));
    assert!(failures[1].starts_with("expected {\"ok\":true}\n     got      {\"ok\": true}"));
    assert!(failures[2].starts_with(&format!("differs from {}", stored.display())));
    let (failures, _) = check(&plan, case, 1024, r#"{"ok":true}"#, false, false);
    assert!(failures[0].starts_with("no snapshot "), "{failures:?}");
    assert!(
        failures[0].ends_with("; run with --bless to write it"),
        "{failures:?}"
    );
    // A table `expect` compares JSON, whatever the spacing.
    let mut json_case = case.clone();
    json_case.snapshot = None;
    json_case.expect = Some(json!({"ok": true}));
    assert!(
        check(&plan, &json_case, 4096, r#"{"ok": true}"#, false, false)
            .0
            .is_empty()
    );
}

/// `[[http]]` tables: their defaults, `body_file` beside the plan, a case's own `http`, and
/// each table that is not valid refused naming it and its key.
#[test]
fn http_recordings_are_read_with_their_defaults_and_refused_naming_the_key() {
    let p = plan("[[case]]\nname = \"a\"\ntool = \"t\"\n").unwrap();
    assert_eq!(
        p.recordings, None,
        "no [[http]]: requests go to the network"
    );

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("fixtures")).unwrap();
    std::fs::write(
        dir.path().join("fixtures/paris.json"),
        b"{\"sky\":\"clear\"}",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("tests.toml"),
        r#"
[[http]]
url = "https://API.example.com:443/weather?city=paris"
body_file = "fixtures/paris.json"

[[http]]
method = "post"
url = "https://api.example.com/report"
status = 201
headers = { content-type = "text/plain" }
body = "thanks"

[[case]]
name = "recorded"
tool = "t"

[[case]]
name = "offline"
tool = "t"
http = []
"#,
    )
    .unwrap();
    let p = TestPlan::load(dir.path()).unwrap();
    let r = p.recordings.as_ref().unwrap();
    let shown: Vec<(&str, &str, u16, &[u8])> = r
        .plan
        .iter()
        .map(|r| (r.method(), r.url(), r.status(), r.body()))
        .collect();
    assert_eq!(
        shown,
        [
            (
                "GET",
                "https://api.example.com/weather?city=paris",
                200,
                &b"{\"sky\":\"clear\"}"[..]
            ),
            (
                "POST",
                "https://api.example.com/report",
                201,
                &b"thanks"[..]
            ),
        ]
    );
    assert_eq!(r.cases.keys().collect::<Vec<_>>(), ["offline"]);
    assert!(r.cases["offline"].is_empty());
    assert_eq!(p.cases[1].http, Some(Vec::new()));

    let rule = "; it takes `config`, `caps` (each 1024 to 1048576), [roots], [[http]] tables with `url`, `method`, `status`, `headers`, and `body` or `body_file`, and [[case]] tables with `name`, `tool`, `args`, `caps`, `http`, and any of `expect`, `contains`, `snapshot`, `must_page` (docs/authoring.md#tests)";
    let case = "[[case]]\nname = \"a\"\ntool = \"t\"\n";
    let refused = |tables: &str| plan(&format!("{tables}\n{case}")).unwrap_err();
    let invalid = |reason: &str| format!("<file> is not a valid tests file: {reason}{rule}");
    assert_eq!(
        refused(
            "[[http]]\nurl = \"https://a.example/\"\n[[http]]\nurl = \"https://a.example/x\"\nstatus = 700\n"
        ),
        invalid("[[http]] #2: `status` 700 is not from 200 to 599")
    );
    assert_eq!(
        refused("[[http]]\nurl = \"api.example.com/x\"\n"),
        invalid(
            "[[http]] #1: `url` \"api.example.com/x\" is not an absolute http:// or https:// URL"
        )
    );
    assert_eq!(
        refused("[[http]]\nurl = \"https://a.example/\"\nbody = \"x\"\nbody_file = \"x.json\"\n"),
        invalid("[[http]] #1: it has both `body` and `body_file`: give one")
    );
    assert_eq!(
        refused(
            "[[http]]\nurl = \"https://a.example/\"\n[[http]]\nurl = \"https://A.example:443/\"\n"
        ),
        invalid("[[http]] #1 and #2 both record GET https://a.example/")
    );
    let missing = refused("[[http]]\nurl = \"https://a.example/\"\nbody_file = \"nope.json\"\n");
    assert!(
        missing.starts_with(
            "<file> is not a valid tests file: [[http]] #1: `body_file` \"nope.json\" cannot be read: "
        ),
        "{missing}"
    );
    assert_eq!(
        plan("[[case]]\nname = \"a\"\ntool = \"t\"\nhttp = [{ url = \"https://a.example/\", method = \"G T\" }]\n")
            .unwrap_err(),
        invalid("case `a`: http #1: `method` \"G T\" is not an HTTP method")
    );
    let unknown = refused("[[http]]\nurl = \"https://a.example/\"\nbodyfile = \"x\"\n");
    assert!(unknown.contains("unknown field `bodyfile`"), "{unknown}");
    let no_url = refused("[[http]]\nbody = \"x\"\n");
    assert!(no_url.contains("missing field `url`"), "{no_url}");
}
