//! The guard's checks on headers alone (the HTTP tests are in `tests/api/guard.rs`).

use super::*;

fn guard(listen: &str, allowed: &[&str], token: Option<&str>) -> Guard {
    Guard::new(GuardOptions {
        listen: listen.parse().unwrap(),
        allowed_hosts: allowed.iter().map(|s| s.to_string()).collect(),
        token: token.map(str::to_string),
        tokens: Vec::new(),
        oauth: None,
        max_body_bytes: 100,
    })
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    h
}

fn status(g: &Guard, pairs: &[(&str, &str)]) -> u16 {
    match g.check_parts(&headers(pairs), None, "/mcp") {
        Ok(_) => 200,
        Err(e) => e.status.as_u16(),
    }
}

#[test]
fn hosts_a_loopback_listener_answers_to() {
    let g = guard("127.0.0.1:8080", &["Sluice.Example"], None);
    for ok in [
        "127.0.0.1:8080",
        "127.0.0.1",
        "127.9.9.9:1",
        "[::1]:8080",
        "localhost:8080",
        "LOCALHOST",
        "localhost.",
        "app.localhost:8080",
        "sluice.example",
        "sluice.example.:443",
    ] {
        assert_eq!(status(&g, &[("host", ok)]), 200, "{ok}");
    }
    for refused in [
        "attacker.example",
        "attacker.example:8080",
        "localhost.attacker.example",
        "10.0.0.1:8080",
        "0.0.0.0:8080",
        "user@127.0.0.1",
        "127.0.0.1:port",
        "::1",
        "",
    ] {
        assert_eq!(status(&g, &[("host", refused)]), 403, "{refused:?}");
    }
    // No Host at all (HTTP/1.0): not a browser, nothing to check.
    assert_eq!(status(&g, &[]), 200);
}

#[test]
fn hosts_of_other_listeners() {
    let any = guard("0.0.0.0:8080", &[], Some("t"));
    let auth = ("authorization", "Bearer t");
    assert_eq!(status(&any, &[("host", "192.168.1.20:8080"), auth]), 200);
    assert_eq!(status(&any, &[("host", "[fe80::1]:8080"), auth]), 200);
    assert_eq!(status(&any, &[("host", "localhost:8080"), auth]), 403);
    assert_eq!(status(&any, &[("host", "box.lan:8080"), auth]), 403);
    let one = guard("10.1.2.3:80", &["box.lan"], Some("t"));
    assert_eq!(status(&one, &[("host", "10.1.2.3"), auth]), 200);
    assert_eq!(status(&one, &[("host", "box.lan"), auth]), 200);
    assert_eq!(status(&one, &[("host", "10.1.2.4"), auth]), 403);
    // The Host check comes before the token: a rebinding page learns nothing more.
    assert_eq!(status(&one, &[("host", "evil.example")]), 403);
    assert_eq!(status(&one, &[("host", "box.lan")]), 401);
}

#[test]
fn cross_origin_needs_the_token() {
    let open = guard("127.0.0.1:8080", &[], None);
    let host = ("host", "127.0.0.1:8080");
    assert_eq!(
        status(&open, &[host, ("origin", "http://127.0.0.1:8080")]),
        200
    );
    for other in [
        "http://evil.example",
        "http://127.0.0.1:9999",
        "http://localhost:8080",
        "null",
        "file://",
    ] {
        assert_eq!(status(&open, &[host, ("origin", other)]), 403, "{other}");
    }
    let with_token = guard("127.0.0.1:8080", &[], Some("t"));
    let origin = ("origin", "http://evil.example");
    assert_eq!(status(&with_token, &[host, origin]), 401);
    assert_eq!(
        status(&with_token, &[host, origin, ("authorization", "Bearer t")]),
        200
    );
    // Default ports are the same origin with or without the port written.
    let proxied = guard("127.0.0.1:8080", &["sluice.example"], None);
    assert_eq!(
        status(
            &proxied,
            &[
                ("host", "sluice.example"),
                ("origin", "https://sluice.example:443")
            ]
        ),
        200
    );
}

#[test]
fn bodies_must_be_json_within_the_limit() {
    let g = guard("127.0.0.1:8080", &[], None);
    let host = ("host", "127.0.0.1:8080");
    let len = ("content-length", "2");
    assert_eq!(
        status(&g, &[host, len, ("content-type", "application/json")]),
        200
    );
    assert_eq!(
        status(
            &g,
            &[
                host,
                len,
                ("content-type", "Application/JSON; charset=utf-8")
            ]
        ),
        200
    );
    assert_eq!(
        status(&g, &[host, len, ("content-type", "text/plain")]),
        415
    );
    assert_eq!(status(&g, &[host, len]), 415);
    assert_eq!(
        status(
            &g,
            &[
                host,
                ("transfer-encoding", "chunked"),
                ("content-type", "text/json")
            ]
        ),
        415
    );
    // No body: no type needed.
    assert_eq!(status(&g, &[host, ("content-length", "0")]), 200);
    assert_eq!(status(&g, &[host]), 200);
    assert_eq!(
        status(
            &g,
            &[
                host,
                ("content-length", "101"),
                ("content-type", "application/json")
            ]
        ),
        413
    );
}

#[test]
fn the_refusals_say_what_is_allowed() {
    let g = guard("127.0.0.1:8080", &["sluice.example"], None);
    let e = g
        .check_parts(&headers(&[("host", "attacker.example")]), None, "/mcp")
        .unwrap_err();
    assert_eq!(
        e.body["error"],
        "refusing Host \"attacker.example\": this server answers only to 127.0.0.1, [::1], localhost, *.localhost, sluice.example (a guard against DNS rebinding); to serve another name, add it with `sluice serve --allowed-host NAME` or server.allowed_hosts in sluice.toml"
    );
    assert_eq!(e.body["host"], "attacker.example");
    let e = g
        .check_parts(
            &headers(&[
                ("host", "127.0.0.1:8080"),
                ("content-length", "3"),
                ("content-type", "text/plain"),
            ]),
            None,
            "/mcp",
        )
        .unwrap_err();
    assert_eq!(
        e.body["error"],
        "a request body must be JSON sent with `Content-Type: application/json`; got Content-Type \"text/plain\""
    );
    assert_eq!(e.body["allowed"], "application/json");
}

#[test]
fn secrets_compare_whole() {
    assert!(same_secret(b"abc", b"abc"));
    assert!(!same_secret(b"abc", b"abd"));
    assert!(!same_secret(b"abc", b"abcd"));
}

#[test]
fn one_host_and_one_origin() {
    let g = guard("127.0.0.1:8080", &[], None);
    let good = ("host", "127.0.0.1:8080");
    // The good Host first, then another: the guard does not pick one.
    for pairs in [
        [good, ("host", "attacker.example")],
        [good, good],
        [good, ("origin", "http://127.0.0.1:8080")],
    ] {
        let mut with = pairs.to_vec();
        if pairs[1].0 == "origin" {
            with.push(("origin", "http://evil.example"));
        }
        let e = g.check_parts(&headers(&with), None, "/mcp").unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST, "{with:?}");
        let shown = if pairs[1].0 == "origin" {
            "Origin"
        } else {
            "Host"
        };
        assert_eq!(e.body["header"], shown);
        assert_eq!(e.body["count"], 2);
        assert_eq!(
            e.body["error"],
            format!(
                "refusing a request with 2 {shown} headers: a request may carry at most one {shown} header (the guard will not choose between them; fix the client or the proxy in front)"
            )
        );
    }
    // Duplicates are refused before the token is asked for.
    let with_token = guard("127.0.0.1:8080", &[], Some("t"));
    assert_eq!(
        status(&with_token, &[good, ("host", "attacker.example")]),
        400
    );
}

#[test]
fn an_absolute_form_target_is_judged() {
    let g = guard("127.0.0.1:8080", &["sluice.example"], None);
    let check = |host: Option<&str>, target: &str| {
        let pairs: Vec<(&str, &str)> = host.map(|h| ("host", h)).into_iter().collect();
        match g.check_parts(&headers(&pairs), Some(target), "/mcp") {
            Ok(_) => 200,
            Err(e) => e.status.as_u16(),
        }
    };
    // `GET http://attacker.example/sessions` with `Host: 127.0.0.1`.
    assert_eq!(check(Some("127.0.0.1:8080"), "attacker.example"), 403);
    assert_eq!(check(None, "attacker.example:8080"), 403);
    let e = g
        .check_parts(
            &headers(&[("host", "127.0.0.1:8080")]),
            Some("attacker.example"),
            "/mcp",
        )
        .unwrap_err();
    assert_eq!(e.body["host"], "attacker.example");
    // An allowed target behind a Host that is not allowed is refused too.
    assert_eq!(check(Some("attacker.example"), "127.0.0.1:8080"), 403);
    assert_eq!(check(Some("127.0.0.1:8080"), "sluice.example"), 200);
    assert_eq!(check(None, "127.0.0.1:8080"), 200);
    // The target's authority is what Origin is compared with.
    let same = g.check_parts(
        &headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://sluice.example"),
        ]),
        Some("sluice.example"),
        "/mcp",
    );
    assert!(same.is_ok(), "{same:?}");
    let cross = g
        .check_parts(
            &headers(&[
                ("host", "sluice.example"),
                ("origin", "http://sluice.example"),
            ]),
            Some("127.0.0.1:8080"),
            "/mcp",
        )
        .unwrap_err();
    assert_eq!(cross.status, StatusCode::FORBIDDEN);
    assert_eq!(cross.body["origin"], "http://sluice.example");
}

#[test]
fn oauth_paths_answer_404_before_the_token_and_after_the_host() {
    let g = guard("127.0.0.1:8080", &[], Some("t0ken"));
    let local = headers(&[("host", "127.0.0.1:8080")]);
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-protected-resource/mcp",
        "/register",
    ] {
        let e = g.check_parts(&local, None, path).unwrap_err();
        assert_eq!(e.status, StatusCode::NOT_FOUND, "{path}");
        assert!(
            e.body["error"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{path} is not served: Sluice serves no OAuth.")),
            "{path}"
        );
    }
    // Every other path still needs the token.
    let e = g.check_parts(&local, None, "/mcp").unwrap_err();
    assert_eq!(e.status, StatusCode::UNAUTHORIZED);
    // And a DNS-rebinding page gets 403 there too.
    let e = g
        .check_parts(&headers(&[("host", "attacker.example")]), None, "/register")
        .unwrap_err();
    assert_eq!(e.status, StatusCode::FORBIDDEN);
}
