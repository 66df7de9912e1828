//! The script runtime natively, with a stub in place of the host's `tool-calls.call`.

use std::cell::RefCell;
use std::rc::Rc;

use super::*;

/// A host that fails the test when the script calls a tool.
fn no_calls() -> CallTool {
    Box::new(|name, _| panic!("unexpected call of {name}"))
}

/// What `script` returned, as JSON text (it must not fail).
fn result(script: &str) -> String {
    match run(script, no_calls()) {
        Ok(out) => out.result,
        Err(e) => panic!("{script:?} failed: {e:?}"),
    }
}

/// What `script` printed (it must not fail).
fn log(script: &str) -> String {
    match run(script, no_calls()) {
        Ok(out) => out.log,
        Err(e) => panic!("{script:?} failed: {e:?}"),
    }
}

/// The error `script` came to (it must fail).
fn error(script: &str) -> ScriptError {
    match run(script, no_calls()) {
        Ok(out) => panic!("{script:?} did not fail: {out:?}"),
        Err(e) => e,
    }
}

/// A stub host: answers every call with `answer(name, arguments)` and records the calls.
#[allow(clippy::type_complexity)]
fn stub(
    answer: impl Fn(&str, &str) -> String + 'static,
) -> (CallTool, Rc<RefCell<Vec<(String, String)>>>) {
    let calls = Rc::new(RefCell::new(Vec::new()));
    let seen = calls.clone();
    let call: CallTool = Box::new(move |name, arguments| {
        seen.borrow_mut()
            .push((name.to_string(), arguments.to_string()));
        answer(name, arguments)
    });
    (call, calls)
}

#[test]
fn the_returned_value_is_json_of_each_type() {
    assert_eq!(result("return 1 + 1"), "2");
    assert_eq!(result("return 0.5"), "0.5");
    assert_eq!(result("return -3e21"), "-3e+21");
    assert_eq!(result(r#"return "a \"b\"\n é""#), r#""a \"b\"\n é""#);
    assert_eq!(result("return true"), "true");
    assert_eq!(result("return false"), "false");
    assert_eq!(result("return null"), "null");
    assert_eq!(result("return [1, 'two', [3], {}]"), r#"[1,"two",[3],{}]"#);
    assert_eq!(
        result("return {b: 1, a: {c: [null]}, u: undefined, f() {}}"),
        r#"{"b":1,"a":{"c":[null]}}"#
    );
    // JSON.stringify's own conversions: NaN is null, a Date its ISO text, toJSON is used.
    assert_eq!(result("return [NaN, Infinity]"), "[null,null]");
    assert_eq!(
        result("return new Date(0)"),
        r#""1970-01-01T00:00:00.000Z""#
    );
    assert_eq!(result("return {toJSON() { return 'mine' }}"), r#""mine""#);
}

#[test]
fn undefined_and_no_return_are_null() {
    assert_eq!(result("return undefined"), "null");
    assert_eq!(result("return"), "null");
    assert_eq!(result("let x = 1"), "null");
    assert_eq!(result("return () => 1"), "null");
    assert_eq!(result("return Symbol('s')"), "null");
}

#[test]
fn await_is_allowed_and_a_returned_promise_is_settled() {
    assert_eq!(result("return await 5"), "5");
    assert_eq!(
        result("const x = await Promise.resolve([1]); return x"),
        "[1]"
    );
    assert_eq!(result("return Promise.resolve({a: 1})"), r#"{"a":1}"#);
    assert_eq!(
        result("let n = 0; for await (const x of [1, 2]) n += x; return n"),
        "3"
    );
    assert_eq!(
        error("await new Promise(() => {})"),
        ScriptError::Uncaught(
            "the script awaited a promise that never settled (there are no timers or events here: tools.call returns its result directly)".into()
        )
    );
    // `await` inside a nested async function only: the body itself is a plain function's.
    assert_eq!(result("const f = async () => await 2; return f()"), "2");
}

#[test]
fn console_log_prints_a_line_per_call() {
    assert_eq!(
        log("console.log('plain text', \"a\\tb\")"),
        "plain text a\tb\n"
    );
    assert_eq!(log("console.log(1, 2.5, true, null)"), "1 2.5 true null\n");
    assert_eq!(
        log("console.log({a: [1, 'x'], b: {}}, [])"),
        "{\"a\":[1,\"x\"],\"b\":{}} []\n"
    );
    // What JSON cannot write is String(value).
    assert_eq!(
        log("console.log(undefined, 10n, Symbol('s'), function f() { return 1 })"),
        "undefined 10 Symbol(s) function f() { return 1 }\n"
    );
    let cyclic = "const a = {}; a.self = a; console.log(a)";
    assert_eq!(log(cyclic), "[object Object]\n");
    assert_eq!(log("console.log()"), "\n");
    assert_eq!(log("console.log('a'); console.log('b\\nc')"), "a\nb\nc\n");
    assert_eq!(log("return 1"), "");
    // A toJSON that logs does not upset the line it is part of.
    assert_eq!(
        log("console.log('x', {toJSON() { console.log('inner'); return 1 }})"),
        "inner\nx 1\n"
    );
}

#[test]
fn the_log_stops_at_its_bound_with_a_marker() {
    // 64 KiB lines (with their newlines), past 1 MiB, then more.
    let script = "const line = 'x'.repeat(65535); for (let i = 0; i < 32; i++) console.log(line); console.log('after'); return 'done'";
    let out = run(script, no_calls()).unwrap();
    assert_eq!(out.result, r#""done""#);
    // 15 whole lines, what fits of the 16th, and the marker: exactly the bound.
    assert_eq!(out.log.len(), MAX_LOG_BYTES);
    let lines: Vec<&str> = out.log.lines().collect();
    assert_eq!(lines.len(), 17);
    assert!(lines[..15].iter().all(|l| l.len() == 65535));
    assert_eq!(
        lines[15].len(),
        MAX_LOG_BYTES - 15 * 65536 - LOG_CUT.len() - 2
    );
    assert_eq!(lines[16], LOG_CUT);
    assert!(out.log.ends_with(&format!("\n{LOG_CUT}\n")));
    assert!(!out.log.contains("after"));
    // A line cut is cut at a character, and one line alone can pass the bound.
    let out = run(
        "console.log('\u{e9}'.repeat(600000)); console.log('after')",
        no_calls(),
    )
    .unwrap();
    let lines: Vec<&str> = out.log.lines().collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[0].chars().count(),
        (MAX_LOG_BYTES - LOG_CUT.len() - 2) / 2
    );
    assert_eq!(lines[1], LOG_CUT);
}

#[test]
fn tools_call_passes_json_and_returns_the_observation_as_an_object() {
    let pages = [
        r#"{"ok":true,"result":{"content":"ok\nERROR a\nERROR b\n","nextOffset":20}}"#,
        r#"{"ok":true,"result":{"content":"ERROR c\n"}}"#,
    ];
    let (call, calls) = stub(move |_, arguments| {
        if arguments.contains(r#""offset":0"#) {
            pages[0].to_string()
        } else {
            pages[1].to_string()
        }
    });
    let script = r#"
        let n = 0, offset = 0;
        for (;;) {
            const r = tools.call("read_file", {path: "app.log", offset});
            if (!r.ok) return r;
            n += (r.result.content.match(/ERROR/g) || []).length;
            if (r.result.nextOffset == null) return {errors: n};
            offset = r.result.nextOffset;
        }
    "#;
    let out = run(script, call).unwrap();
    assert_eq!(out.result, r#"{"errors":3}"#);
    assert_eq!(out.calls, 2);
    assert_eq!(out.inner_bytes, (pages[0].len() + pages[1].len()) as u64);
    assert_eq!(
        *calls.borrow(),
        [
            (
                "read_file".to_string(),
                r#"{"path":"app.log","offset":0}"#.to_string()
            ),
            (
                "read_file".to_string(),
                r#"{"path":"app.log","offset":20}"#.to_string()
            ),
        ]
    );
}

#[test]
fn tools_call_defaults_to_no_arguments_and_shows_errors_as_objects() {
    let answer = r#"{"ok":false,"error":"no such tool","kind":"unknown-tool"}"#;
    let (call, calls) = stub(move |_, _| answer.to_string());
    let out = run(
        "const r = tools.call('nope'); const s = await tools.call('nope', null); return [r.ok, r.error, r.kind, s.kind]",
        call,
    )
    .unwrap();
    assert_eq!(
        out.result,
        r#"[false,"no such tool","unknown-tool","unknown-tool"]"#
    );
    assert_eq!(out.calls, 2);
    assert_eq!(out.inner_bytes, 2 * answer.len() as u64);
    assert_eq!(
        *calls.borrow(),
        [
            ("nope".to_string(), "{}".to_string()),
            ("nope".to_string(), "{}".to_string())
        ]
    );
}

#[test]
fn tools_call_refuses_a_name_or_arguments_of_the_wrong_type() {
    assert_eq!(
        error("tools.call(1)"),
        ScriptError::Uncaught(
            "TypeError: tools.call: the tool name must be a string, such as \"read_file\" (got number) (line 1, column 11)".into()
        )
    );
    assert_eq!(
        error("\ntools.call('read_file', 'app.log')"),
        ScriptError::Uncaught(
            "TypeError: tools.call: the arguments of read_file must be an object, such as {path: \"app.log\"} (got string) (line 2, column 11)".into()
        )
    );
    assert_eq!(
        error("tools.call('read_file', ['app.log'])"),
        ScriptError::Uncaught(
            "TypeError: tools.call: the arguments of read_file must be an object, such as {path: \"app.log\"} (got an array) (line 1, column 11)".into()
        )
    );
    // The script may catch them.
    assert_eq!(
        result("try { tools.call() } catch (e) { return e.name }"),
        r#""TypeError""#
    );
}

#[test]
fn a_syntax_error_has_the_users_line_and_column() {
    assert_eq!(
        error("let x = ;"),
        ScriptError::Syntax("unexpected token ';', primary expression at line 1, col 9".into())
    );
    assert_eq!(
        error("const a = 1;\n\n   let b = (;"),
        ScriptError::Syntax("unexpected token ';', primary expression at line 3, col 13".into())
    );
    assert_eq!(
        error("return {a: 1"),
        ScriptError::Syntax(
            "unexpected end of the script at line 1 (a bracket, brace or string left open?)".into()
        )
    );
    assert_eq!(
        error("for (;;) {\n  x++\n"),
        ScriptError::Syntax(
            "unexpected end of the script at line 2 (a bracket, brace or string left open?)".into()
        )
    );
    // The body cannot close the function it runs in.
    assert_eq!(
        error("return 1\n}); (function () {"),
        ScriptError::Syntax(
            "unexpected token '}': it closes no '{' (the script is the body of a function)".into()
        )
    );
    assert_eq!(
        error("const a = 1; }"),
        ScriptError::Syntax(
            "expected one of ')' or ',', got '}' in CoverParenthesizedExpressionAndArrowParameterList at line 2, col 1".into()
        )
    );
}

#[test]
fn an_uncaught_exception_has_its_message_and_line() {
    assert_eq!(
        error("\n\nthrow new Error('boom')"),
        ScriptError::Uncaught("Error: boom (line 3, column 7)".into())
    );
    // Columns of the first line are the user's too.
    assert_eq!(
        error("throw new RangeError('too far')"),
        ScriptError::Uncaught("RangeError: too far (line 1, column 7)".into())
    );
    assert_eq!(
        error("const r = null;\nreturn r.result"),
        ScriptError::Uncaught(
            "TypeError: cannot convert 'null' or 'undefined' to object (line 2, column 10)".into()
        )
    );
    assert_eq!(
        error("function f() {\n  return undefined.y;\n}\nreturn f()"),
        ScriptError::Uncaught(
            "TypeError: cannot convert 'null' or 'undefined' to object (line 2, column 20)".into()
        )
    );
    // A thrown value that is not an Error shows as console.log would.
    assert_eq!(
        error("\nthrow 'boom'"),
        ScriptError::Uncaught("boom (line 2, column 7)".into())
    );
    assert_eq!(
        error("throw {code: 7}"),
        ScriptError::Uncaught(r#"{"code":7} (line 1, column 7)"#.into())
    );
    // In a body that awaits, an Error keeps where it was made.
    assert_eq!(
        error("await 1;\nthrow new Error('late')"),
        ScriptError::Uncaught("Error: late (line 2, column 7)".into())
    );
    assert_eq!(
        error("x + 1"),
        ScriptError::Uncaught("ReferenceError: x is not defined (line 1, column 1)".into())
    );
}

#[test]
fn a_result_json_cannot_write_is_an_invalid_result() {
    assert_eq!(
        error("const a = {}; a.self = a; return a"),
        ScriptError::InvalidResult(
            "what the script returned cannot be written as JSON: TypeError: cyclic object value"
                .into()
        )
    );
    assert_eq!(
        error("return {n: 10n}"),
        ScriptError::InvalidResult(
            "what the script returned cannot be written as JSON: TypeError: cannot serialize bigint to JSON".into()
        )
    );
}

#[test]
fn a_blank_script_is_an_invalid_argument() {
    for script in ["", " ", "\n\t  \n"] {
        assert_eq!(
            error(script),
            ScriptError::InvalidArgument(
                "the script is empty: write the body of a function that returns the answer, such as `return 1 + 1`".into()
            )
        );
    }
}

#[test]
fn the_globals_are_the_standard_ones_and_the_tools() {
    assert_eq!(
        result(
            "return [typeof tools.call, typeof console.log, typeof setTimeout, typeof require, typeof fetch, typeof process, typeof JSON.parse, typeof Math.max, typeof eval]"
        ),
        r#"["function","function","undefined","undefined","undefined","undefined","function","function","function"]"#
    );
    // The result is written with the intrinsic JSON.stringify, whatever the script does to it.
    assert_eq!(
        result("JSON.stringify = () => 'mine'; return {a: 1}"),
        r#"{"a":1}"#
    );
}

#[test]
fn the_linear_string_searches_agree_with_the_builtins() {
    // indexOf: Latin-1 and UTF-16 strings and search strings, positions, and the cases left
    // to the builtin (a receiver or search value that is not a string).
    assert_eq!(
        result(
            "const a = 'abcabc'; return [a.indexOf('c'), a.indexOf('c', 3), a.indexOf('', 10), a.indexOf('x'), a.indexOf('c', -5), a.indexOf('c', Infinity), 'a\\u2026b\\u2026'.indexOf('\\u2026', 2), 'abc'.indexOf('\\u2026'), 'a\\u2026bc'.indexOf('bc'), 'a\\u00e9bc'.indexOf('\\u00e9'), String.prototype.indexOf.call(123, '2'), 'a,b'.indexOf({toString() { return ',' }}), 'ab'.indexOf('abc')]"
        ),
        "[2,5,6,-1,2,-1,3,-1,2,1,1,1,-1]"
    );
    assert_eq!(
        result(
            "return ['a,b,,c'.split(','), 'a,b,c'.split(',', 2), 'a,b'.split(',', 0), 'abc'.split(''), ''.split(','), 'abc'.split(), 'a1b2c'.split(/\\d/), 'a--b'.split('--'), ',a,'.split(','), '\\u2026x\\u2026'.split('x'), 'a,b'.split(',', -1)]"
        ),
        r#"[["a","b","","c"],["a","b"],[],["a","b","c"],[""],["abc"],["a","b","c"],["a","b"],["","a",""],["…","…"],["a","b"]]"#
    );
    assert_eq!(
        result(
            "return ['a.b.c'.replaceAll('.', '/'), 'aaa'.replaceAll('aa', 'b'), 'x'.replaceAll('', '-'), 'a.b'.replaceAll('.', '$&$&'), 'a.b'.replaceAll('.', () => '!'), 'a1b1'.replaceAll(/1/g, '2'), 'a\\u2026b'.replaceAll('\\u2026', '.')]"
        ),
        r#"["a/b/c","ba","-x-","a..b","a!b","a2b2","a.b"]"#
    );
    // They look like the builtins.
    assert_eq!(
        result(
            "const d = Object.getOwnPropertyDescriptor(String.prototype, 'split'); return [String.prototype.indexOf.name, String.prototype.indexOf.length, String.prototype.split.length, String.prototype.replaceAll.length, RegExp.prototype.exec.name, RegExp.prototype.exec.length, d.enumerable, d.writable, d.configurable]"
        ),
        r#"["indexOf",1,2,2,"exec",1,false,true,true]"#
    );
}

#[test]
fn regular_expressions_over_a_long_latin1_string_match_as_before() {
    // Longer than the length from which `exec` is given the string's UTF-16 copy.
    let script = r#"
        const s = "ERROR x\n".repeat(2000);
        const re = /E(RR)OR/g;
        let n = 0, last = -1, m;
        while ((m = re.exec(s)) !== null) { n++; last = m.index; if (m.input !== s) return "input"; }
        const all = [...s.matchAll(/E(RR)OR/g)];
        return [s.match(/ERROR/g).length, n, last, all.length, all[1999][1], all[1999].index,
            s.replace(/ERROR/g, "E").length, s.split(/\n/).length, s.search(/x/), /x$/m.test(s),
            ("\u2026" + s).match(/ERROR/g).length, "short ERROR".match(/ERROR/).index];
    "#;
    assert_eq!(
        result(script),
        "[2000,2000,15992,2000,\"RR\",15992,8000,2001,6,true,2000,6]"
    );
}

#[test]
fn find_searches_each_pair_of_encodings() {
    use boa_engine::string::JsStr;
    let units = |s: &str| s.encode_utf16().collect::<Vec<u16>>();
    let (hay16, needle16) = (units("a\u{2026}bcbc"), units("bc"));
    assert_eq!(
        fast::find(JsStr::latin1(b"abcbc"), JsStr::latin1(b"bc"), 0),
        Some(1)
    );
    assert_eq!(
        fast::find(JsStr::latin1(b"abcbc"), JsStr::latin1(b"bc"), 2),
        Some(3)
    );
    assert_eq!(
        fast::find(JsStr::latin1(b"abcbc"), JsStr::latin1(b"bc"), 4),
        None
    );
    assert_eq!(
        fast::find(JsStr::latin1(b"abcbc"), JsStr::latin1(b""), 5),
        Some(5)
    );
    assert_eq!(
        fast::find(JsStr::latin1(b"abcbc"), JsStr::latin1(b""), 6),
        None
    );
    assert_eq!(
        fast::find(JsStr::latin1(b"abcbc"), JsStr::utf16(&needle16), 0),
        Some(1)
    );
    assert_eq!(
        fast::find(JsStr::latin1(b"abcbc"), JsStr::utf16(&units("\u{2026}")), 0),
        None
    );
    assert_eq!(
        fast::find(JsStr::utf16(&hay16), JsStr::latin1(b"bc"), 3),
        Some(4)
    );
    assert_eq!(
        fast::find(JsStr::utf16(&hay16), JsStr::utf16(&units("\u{2026}b")), 0),
        Some(1)
    );
    assert_eq!(
        fast::find(JsStr::utf16(&hay16), JsStr::utf16(&units("cbcx")), 0),
        None
    );
}

#[test]
fn a_result_past_its_bound_is_cut_and_its_size_kept() {
    let out = run("return 'é'.repeat(5 * 1024 * 1024)", no_calls()).unwrap();
    // The JSON: two quotes around 5 Mi two-byte characters.
    assert_eq!(out.result_bytes, 2 + 10 * 1024 * 1024);
    assert_eq!(out.result.len(), MAX_RESULT_BYTES - 1, "cut at a character");
    assert!(out.result.starts_with("\"éé"));
    let small = run("return [1, 2]", no_calls()).unwrap();
    assert_eq!((small.result.as_str(), small.result_bytes), ("[1,2]", 5));
}

#[test]
fn a_returned_string_is_quoted_as_json_stringify_quotes_it() {
    // Latin-1 and UTF-16 strings, every control, quotes, backslashes, a pair and lone
    // surrogates: the string's own path against JSON.stringify's (inside an array).
    let strings = [
        r#""plain ascii""#,
        r#""a \"b\" \\ c\n\r\t\b\f \u0000 \u0001 \u001f \u007f é ÿ""#,
        r#""é and € and 😀 and \ud800 and \udc00x and \udbff\udfff""#,
        r#"Array.from({length: 0x100}, (_, i) => String.fromCharCode(i)).join("")"#,
        r#""\u2028\u2029""#,
        r#""""#,
    ];
    for s in strings {
        let alone = result(&format!("return {s}"));
        let in_array = result(&format!("return [{s}]"));
        assert_eq!(format!("[{alone}]"), in_array, "{s}");
    }
}

#[test]
fn a_long_string_keeps_whole_escapes_and_counts_the_rest() {
    // 5 Mi newlines: 10 Mi bytes of "\n" escapes and the quotes; at 8 MiB no escape is split.
    let out = run(r#"return "\n".repeat(5 * 1024 * 1024)"#, no_calls()).unwrap();
    assert_eq!(out.result_bytes, 2 + 10 * 1024 * 1024);
    assert_eq!(
        out.result.len(),
        MAX_RESULT_BYTES - 1,
        "the quote and whole escapes"
    );
    assert!(out.result.ends_with("\\n"));
}

#[test]
fn repeat_agrees_with_the_builtin() {
    // Short results stay with the builtin; long ones are joined in chunks: the same strings
    // as joining an array, which repeat does not use.
    for (s, n) in [
        ("ab", 3),
        ("x", 70_000),
        ("é€", 40_000),
        ("abc", 21_846),
        ("xyz", 65_537),
    ] {
        let script = format!(
            "const r = {s:?}.repeat({n}); return [r.length, r === Array({n} + 1).join({s:?})]"
        );
        let len = s.encode_utf16().count() * n;
        assert_eq!(result(&script), format!("[{len},true]"), "{s} {n}");
    }
    let e = error("return 'x'.repeat(-1)");
    assert!(
        matches!(e, ScriptError::Uncaught(ref m) if m.contains("RangeError")),
        "{e:?}"
    );
    assert_eq!(result("return 'x'.repeat(2.9)"), r#""xx""#);
    assert_eq!(result("return ''.repeat(1e9)"), r#""""#);
}

#[test]
fn json_parse_agrees_with_the_builtin() {
    // The replacement (no reviver) against the builtin (a reviver that changes nothing).
    for text in [
        r#"{"ok":true,"result":{"b":1,"a":[1,2.5,-3e21,null,true,"x"],"é":"\u00e9\n"}}"#,
        r#"[]"#,
        r#""a string""#,
        r#"12345678901234567890"#,
        r#"{"__proto__":{"polluted":1}}"#,
    ] {
        let ours = result(&format!("return JSON.parse({text:?})"));
        let builtin = result(&format!("return JSON.parse({text:?}, (k, v) => v)"));
        assert_eq!(ours, builtin, "{text}");
    }
    assert_eq!(
        result(
            r#"const o = JSON.parse('{"__proto__":{"p":1}}'); return [Object.keys(o), ({}).p === undefined]"#
        ),
        r#"[["__proto__"],true]"#
    );
    assert_eq!(
        result(r#"return Object.keys(JSON.parse('{"b":1,"a":2}'))"#),
        r#"["b","a"]"#
    );
    let e = error("return JSON.parse('{bad')");
    assert!(
        matches!(e, ScriptError::Uncaught(ref m) if m.contains("SyntaxError")),
        "{e:?}"
    );
}
