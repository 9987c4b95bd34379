//! The tests of `proxy`.

#![allow(clippy::unwrap_used)]
use super::*;

#[test]
fn hosts_match_their_patterns() {
    assert!(matches("example.com", "example.com"));
    assert!(!matches("example.com", "api.example.com"));
    assert!(matches("*.example.com", "api.example.com"));
    assert!(matches(".example.com", "example.com"));
    assert!(!matches("*.example.com", "badexample.com"));
    assert!(matches("*", "anything.org"));
    assert_eq!(normal("[::1]"), "::1");
    assert_eq!(normal("PyPI.org."), "pypi.org");
    assert_eq!(
        split_host_port("a.org:8443", 443),
        Some(("a.org".into(), 8443))
    );
    assert_eq!(split_host_port("a.org", 80), Some(("a.org".into(), 80)));
    assert_eq!(split_host_port("[::1]:9", 80), Some(("::1".into(), 9)));
    assert_eq!(split_host_port("a:b:c", 80), None);
}

/// Answers every question with `grant`, counting them.
struct Counting {
    grant: bool,
    asked: std::sync::atomic::AtomicUsize,
}

impl Asks for Counting {
    fn ask<'a>(
        &'a self,
        _ask: Ask,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'a>> {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let grant = self.grant;
        Box::pin(async move {
            if grant {
                Ok(())
            } else {
                Err("denied by a person".into())
            }
        })
    }
}

fn asked(a: &Counting) -> usize {
    a.asked.load(std::sync::atomic::Ordering::SeqCst)
}

#[tokio::test]
async fn a_refusal_holds_for_the_command_and_a_grant_for_the_run() {
    let policy = Arc::new(NetPolicy::new(vec!["allowed.org".into()]));
    let no = Arc::new(Counting {
        grant: false,
        asked: 0.into(),
    });
    let command = CommandNet::new(policy.clone(), no.clone());
    assert!(command.decide("allowed.org", 443).await.is_ok());
    assert_eq!(asked(&no), 0);
    // npm retrying the same registry, then its other host: one question.
    for host in [
        "registry.npmjs.org",
        "registry.npmjs.org",
        "registry.yarnpkg.com",
    ] {
        let err = command.decide(host, 443).await.unwrap_err();
        assert_eq!(err, "denied by a person");
    }
    assert_eq!(asked(&no), 1);
    // Another host is another question.
    assert!(command.decide("example.org", 80).await.is_err());
    assert_eq!(asked(&no), 2);
    // The next command may be asked again (the person may have changed their mind).
    let next = CommandNet::new(policy.clone(), no.clone());
    assert!(next.decide("registry.npmjs.org", 443).await.is_err());
    assert_eq!(asked(&no), 3);
    // A grant is the run's: later commands are not asked.
    let yes = Arc::new(Counting {
        grant: true,
        asked: 0.into(),
    });
    assert!(CommandNet::new(policy.clone(), yes.clone())
        .decide("pypi.org", 443)
        .await
        .is_ok());
    assert!(CommandNet::new(policy, yes.clone())
        .decide("files.pythonhosted.org", 443)
        .await
        .is_ok());
    assert_eq!(asked(&yes), 1);
}

#[test]
fn odd_patterns_hosts_and_addresses() {
    assert!(!matches("*.", "anything.org"));
    assert!(!matches(".", "anything.org"));
    assert!(!matches("*..", "anything.org"));
    assert!(!matches("", ""));
    assert!(well_formed("pypi.org") && well_formed("::1") && well_formed("10.0.0.1"));
    assert!(!well_formed("evil.org\r\nconnect to pypi.org"));
    assert!(!well_formed("a b") && !well_formed("\u{1b}[2Kx") && !well_formed(""));
    let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
    for no in [
        "169.254.169.254",
        "::ffff:169.254.169.254",
        "fe80::1",
        "0.0.0.0",
        "::",
        "224.0.0.1",
        "255.255.255.255",
    ] {
        assert!(!reachable(ip(no)), "{no}");
    }
    for yes in ["127.0.0.1", "10.1.2.3", "::1", "93.184.216.34"] {
        assert!(reachable(ip(yes)), "{yes}");
    }
}

#[tokio::test]
async fn a_command_raises_ten_questions_at_most() {
    let policy = Arc::new(NetPolicy::new(Vec::new()));
    let no = Arc::new(Counting {
        grant: false,
        asked: 0.into(),
    });
    let command = CommandNet::new(policy, no.clone());
    for i in 0..25 {
        assert!(command
            .decide(&format!("h{i}.example.org"), 443)
            .await
            .is_err());
    }
    assert_eq!(asked(&no), MOST_QUESTIONS);
    // A name that is not one is refused without a question.
    let fresh = Arc::new(Counting {
        grant: true,
        asked: 0.into(),
    });
    let other = CommandNet::new(Arc::new(NetPolicy::new(Vec::new())), fresh.clone());
    assert!(other.decide("a\u{1b}]evil", 443).await.is_err());
    assert_eq!(asked(&fresh), 0);
}

/// A pair of connected sockets on loopback: (what the command holds, what the
/// proxy serves).
async fn pair() -> (tokio::net::TcpStream, tokio::net::TcpStream) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let c = tokio::net::TcpStream::connect(l.local_addr().unwrap())
        .await
        .unwrap();
    let (s, _) = l.accept().await.unwrap();
    (c, s)
}

#[tokio::test]
async fn a_plain_request_goes_on_for_its_host_alone() {
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = upstream.local_addr().unwrap().port();
    let got = tokio::spawn(async move {
        let (mut s, _) = upstream.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .await
            .unwrap();
        String::from_utf8_lossy(&head).into_owned()
    });
    let yes = Arc::new(Counting {
        grant: true,
        asked: 0.into(),
    });
    let net = CommandNet::new(Arc::new(NetPolicy::new(vec!["127.0.0.1".into()])), yes);
    let (mut c, s) = pair().await;
    let served = tokio::spawn({
        let net = net.clone();
        async move { http(s, &net).await }
    });
    c.write_all(
        format!(
            "GET http://127.0.0.1:{port}/x HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nProxy-Authorization: Basic c2VjcmV0\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let head = got.await.unwrap();
    assert!(head.starts_with("GET /x HTTP/1.1\r\n"), "{head}");
    assert!(head.contains("Accept: */*\r\n"), "{head}");
    assert!(head.contains("Connection: close\r\n"), "{head}");
    assert!(
        !head.to_ascii_lowercase().contains("proxy-authorization"),
        "{head}"
    );
    assert!(!head.contains("keep-alive"), "{head}");
    let mut answer = String::new();
    c.read_to_string(&mut answer).await.unwrap();
    assert!(answer.ends_with("ok"), "{answer}");
    drop(c);
    served.await.unwrap();

    // A Host naming another host than the request: refused.
    let (mut c, s) = pair().await;
    let served = tokio::spawn({
        let net = net.clone();
        async move { http(s, &net).await }
    });
    c.write_all(
        format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: attacker.example\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut answer = String::new();
    c.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    served.await.unwrap();

    // Bytes that are not UTF-8 in the request line: an answer, no panic.
    let (mut c, s) = pair().await;
    let served = tokio::spawn(async move { http(s, &net).await });
    c.write_all(b"GET http://nowhere.invalid/\xff\xff HTTP/1.1\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = c.read_to_end(&mut answer).await;
    served.await.unwrap();
}
