use std::net::{IpAddr, SocketAddr};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

use super::*;

fn kind(addr: &str) -> Option<&'static str> {
    refused_kind(addr.parse::<IpAddr>().unwrap())
}

#[test]
fn private_loopback_link_local_and_metadata_addresses_are_refused() {
    for (addr, want) in [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("10.0.0.5", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "shared (carrier-grade NAT)"),
        ("100.127.255.254", "shared (carrier-grade NAT)"),
        ("169.254.169.254", "link-local"),
        ("255.255.255.255", "broadcast"),
        ("224.0.0.1", "multicast"),
        ("192.0.2.1", "documentation"),
        ("198.18.0.1", "benchmarking"),
        ("192.0.0.8", "protocol-assignment"),
        ("240.0.0.1", "reserved"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fc00::1", "private"),
        ("fd00:ec2::254", "private"),
        ("fe80::1", "link-local"),
        ("ff02::1", "multicast"),
        ("2001:db8::1", "documentation"),
        // IPv4 written as IPv6 is judged as the IPv4 address.
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "link-local"),
        ("64:ff9b::a9fe:a9fe", "link-local"),
        ("::10.0.0.1", "private"),
    ] {
        assert_eq!(kind(addr), Some(want), "{addr}");
    }
}

#[test]
fn public_addresses_pass() {
    for addr in [
        "1.1.1.1",
        "8.8.8.8",
        "100.63.255.255",
        "100.128.0.1",
        "172.32.0.1",
        "198.20.0.1",
        "2606:4700:4700::1111",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
    ] {
        assert_eq!(kind(addr), None, "{addr}");
    }
}

#[test]
fn urls_need_https_a_host_no_user_info_and_a_public_ip_literal() {
    let p = OutboundPolicy::new();
    assert!(p.check_url("https://mcp.example.com/mcp").is_ok());
    assert!(p.check_url("https://8.8.8.8/mcp").is_ok());
    for (url, want) in [
        ("http://mcp.example.com/mcp", "must use https"),
        ("ftp://mcp.example.com/", "is not an http(s) URL"),
        ("mcp.example.com/mcp", "is not an http(s) URL"),
        ("https://user:secret@mcp.example.com/", "not in the URL"),
        ("https://127.0.0.1:8080/mcp", "a loopback address"),
        ("https://[::1]/mcp", "a loopback address"),
        (
            "https://169.254.169.254/latest/meta-data",
            "a link-local address",
        ),
        ("https://[::ffff:a9fe:a9fe]/", "a link-local address"),
        ("https://0x7f000001/", "a loopback address"),
        ("https://2130706433/", "a loopback address"),
    ] {
        let err = p.check_url(url).unwrap_err().to_string();
        assert!(err.contains(want), "{url}: {err}");
    }
}

#[test]
fn an_allowed_host_may_use_http_and_any_address() {
    let p = OutboundPolicy::new()
        .with_allowed_host("MCP.internal")
        .with_allowed_host("[::1]")
        .with_allowed_host("127.0.0.1");
    assert!(p.check_url("http://mcp.internal:8080/mcp").is_ok());
    assert!(p.check_url("http://[::1]:9000/").is_ok());
    assert!(p.check_url("http://127.0.0.1:9000/").is_ok());
    let lo: SocketAddr = "127.0.0.1:80".parse().unwrap();
    assert_eq!(p.filter("mcp.internal", vec![lo]).unwrap(), vec![lo]);
    // Allowing one host allows nothing else.
    assert!(p.check_url("http://other.internal/").is_err());
    assert!(p.filter("other.internal", vec![lo]).is_err());
    assert_eq!(
        p.to_string(),
        "public https only, and mcp.internal, ::1, 127.0.0.1"
    );
}

#[test]
fn resolved_addresses_are_filtered_and_none_left_is_refused() {
    let p = OutboundPolicy::new();
    let public: SocketAddr = "93.184.216.34:443".parse().unwrap();
    let private: SocketAddr = "10.1.2.3:443".parse().unwrap();
    assert_eq!(
        p.filter("mixed.example", vec![private, public]).unwrap(),
        vec![public]
    );
    let err = p.filter("rebound.example", vec![private]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "rebound.example resolves to 10.1.2.3, a private address, which user servers may not reach"
    );
}

/// A server on loopback that answers `/` with 200 and `/to?u=URL` with a redirect to URL.
async fn server() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let svc = service_fn(|req: http::Request<hyper::body::Incoming>| async move {
                    let target = req
                        .uri()
                        .query()
                        .and_then(|q| q.strip_prefix("u="))
                        .map(str::to_owned);
                    let res = match target {
                        Some(to) => http::Response::builder()
                            .status(302)
                            .header("location", to)
                            .body(Full::new(Bytes::new())),
                        None => http::Response::builder().body(Full::new(Bytes::from("ok"))),
                    };
                    Ok::<_, std::convert::Infallible>(res.unwrap())
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

fn chain(e: &reqwest::Error) -> String {
    let mut out = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        out.push_str(": ");
        out.push_str(&s.to_string());
        src = s.source();
    }
    out
}

#[tokio::test]
async fn the_client_refuses_loopback_by_name_and_lets_an_allowed_host_through() {
    let addr = server().await;
    let port = addr.port();
    // By name: the resolver drops loopback, so nothing is left to connect to.
    let err = OutboundPolicy::new()
        .client()
        .get(format!("https://localhost:{port}/"))
        .send()
        .await
        .unwrap_err();
    assert!(
        chain(&err).contains("a loopback address"),
        "{}",
        chain(&err)
    );
    // The operator's exception.
    let allowed = OutboundPolicy::new().with_allowed_host("localhost");
    let res = allowed
        .client()
        .get(format!("http://localhost:{port}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "ok");
}

#[tokio::test]
async fn a_redirect_to_metadata_or_loopback_is_refused() {
    let addr = server().await;
    let port = addr.port();
    let p = OutboundPolicy::new().with_allowed_host("127.0.0.1");
    let client = p.client();
    for (to, want) in [
        // Another origin: refused before anything is checked.
        (
            "http://169.254.169.254/latest/meta-data",
            "must stay on the server's origin",
        ),
        (
            &format!("http://localhost:{port}/") as &str,
            "must stay on the server's origin",
        ),
    ] {
        let err = client
            .get(format!("http://127.0.0.1:{port}/to?u={to}"))
            .send()
            .await
            .unwrap_err();
        assert!(chain(&err).contains(want), "{to}: {}", chain(&err));
    }
    // The same origin is followed.
    let res = client
        .get(format!(
            "http://127.0.0.1:{port}/to?u=http://127.0.0.1:{port}/"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "ok");
}

#[tokio::test]
async fn an_ip_literal_is_checked_before_connecting() {
    let addr = server().await;
    let err = OutboundPolicy::new()
        .check_url(&format!("https://127.0.0.1:{}/", addr.port()))
        .unwrap_err();
    assert!(matches!(
        err,
        OutboundError::Refused {
            kind: "loopback",
            ..
        }
    ));
}
