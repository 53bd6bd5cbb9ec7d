//! A Locara deployment on loopback, as docs/deploy.md lays one out on Kubernetes: a real OCI
//! registry (`docker-registry`) holding a signed tool, N `locara serve --http --stateless`
//! replicas, each with its own home filled by `locara install --from oci://…` (what the init
//! container does), one auth file of API keys, and Debian's haproxy in front, health-checking
//! each replica's `/readyz`. [`McpClient`] is a keep-alive HTTP/1.1 MCP client for load.

use std::{
    io::{BufRead as _, BufReader, Read as _, Write as _},
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    time::{Duration, Instant},
};

use crate::{TestHome, free_port, oci::DockerRegistry, sigterm};

/// Runs `command` to success; its stdout.
fn run_ok(command: &mut Command) -> String {
    let output = command.output().expect("run");
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// One `locara serve` replica.
#[derive(Debug)]
pub struct Replica {
    child: Child,
    /// Its MCP port.
    pub port: u16,
    /// Its Prometheus port.
    pub metrics_port: u16,
    /// Its home (tools installed from the registry).
    pub home: PathBuf,
}

impl Replica {
    /// The `locara_calls_total` it reports, summed over tools and outcomes; `None` once it
    /// stopped.
    pub fn calls(&self) -> Option<u64> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.metrics_port)).ok()?;
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).ok()?;
        Some(
            text.lines()
                .filter(|l| l.starts_with("locara_calls_total{"))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
                .sum(),
        )
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Debian's haproxy in front of some replicas, on a free loopback port; stopped when dropped.
#[derive(Debug)]
pub struct Haproxy {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Haproxy {
    /// Balances round-robin over `backends` (loopback ports), checking each one's `/readyz`
    /// every 200 ms (a replica that drains answers 503 and is taken out). A request whose
    /// connection fails, or that gets no answer or a 503, is sent again to another replica:
    /// safe for the read-only calls the tests make.
    ///
    /// # Panics
    /// When haproxy is not installed (`.ci/test-deps` installs it) or does not start.
    pub fn start(backends: &[u16]) -> Haproxy {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut config = format!(
            "global\n  maxconn 2000\n\
             defaults\n  mode http\n  timeout connect 2s\n  timeout client 60s\n  \
             timeout server 60s\n  timeout http-keep-alive 60s\n  retries 3\n  \
             option redispatch 1\n  retry-on conn-failure empty-response response-timeout 503\n\
             frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend locara\n\
             backend locara\n  balance roundrobin\n  option httpchk GET /readyz\n  \
             http-check expect status 200\n  default-server inter 200ms fall 1 rise 2\n"
        );
        for (i, backend) in backends.iter().enumerate() {
            config.push_str(&format!("  server r{i} 127.0.0.1:{backend} check\n"));
        }
        let path = dir.path().join("haproxy.cfg");
        std::fs::write(&path, config).unwrap();
        let child = Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("haproxy (Debian's `haproxy`, which .ci/test-deps installs)");
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "haproxy did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Haproxy {
            child,
            port,
            _dir: dir,
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The registry, the replicas and their shared auth file; haproxy is started over them with
/// [`Cluster::balancer`].
#[derive(Debug)]
pub struct Cluster {
    /// The replicas, in start order.
    pub replicas: Vec<Replica>,
    /// An API key every replica admits.
    pub key: String,
    /// The OCI location the tools were pulled from.
    pub location: String,
    _registry: DockerRegistry,
    _publisher: TestHome,
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// Publishes `text.chunk@0.1.0` to a fresh registry, makes one API key (app: text.chunk
    /// only, `rate_per_minute` high enough for load), and starts `replicas` replicas of
    /// `locara` (the binary at `locara`), each after installing the tool from the registry.
    ///
    /// # Panics
    /// When any step fails (this is test setup).
    pub fn start(locara: &Path, replicas: usize) -> Cluster {
        let registry = DockerRegistry::start();
        let publisher = TestHome::new();
        let location = format!("oci://{}/locara", registry.host());
        run_ok(
            Command::new(locara)
                .arg("--home")
                .arg(publisher.path())
                .args([
                    "push",
                    "text.chunk@0.1.0",
                    "--to",
                    &location,
                    "--plain-http",
                ]),
        );
        let dir = tempfile::tempdir().unwrap();
        let app = dir.path().join("app.json");
        std::fs::write(
            &app,
            r#"{"schema_version": 1, "name": "chunker", "tools": ["text.chunk@0.1.0"]}"#,
        )
        .unwrap();
        let auth = dir.path().join("auth.json");
        let key = run_ok(
            Command::new(locara)
                .args(["keys", "add", "load", "--app"])
                .arg(&app)
                .arg("--auth")
                .arg(&auth)
                .args(["--max-concurrent", "64", "--rate-per-minute", "60000000"]),
        )
        .trim()
        .to_owned();
        let replicas = (0..replicas)
            .map(|i| {
                let home = dir.path().join(format!("replica-{i}"));
                std::fs::create_dir_all(home.join("trust")).unwrap();
                for entry in std::fs::read_dir(publisher.path().join("trust")).unwrap() {
                    let entry = entry.unwrap();
                    std::fs::copy(entry.path(), home.join("trust").join(entry.file_name()))
                        .unwrap();
                }
                // What the init container does: install the app's tools from the registry.
                run_ok(Command::new(locara).arg("--home").arg(&home).args([
                    "install",
                    "text.chunk@0.1.0",
                    "--from",
                    &location,
                    "--plain-http",
                ]));
                spawn_replica(locara, &home, &auth)
            })
            .collect();
        Cluster {
            replicas,
            key,
            location,
            _registry: registry,
            _publisher: publisher,
            _dir: dir,
        }
    }

    /// haproxy over the replicas numbered `which`.
    pub fn balancer(&self, which: &[usize]) -> Haproxy {
        let ports: Vec<u16> = which.iter().map(|&i| self.replicas[i].port).collect();
        Haproxy::start(&ports)
    }

    /// Sends SIGTERM to replica `i` (as Kubernetes stops a pod): it drains and exits.
    pub fn stop(&self, i: usize) {
        sigterm(&self.replicas[i].child);
    }

    /// Waits (at most `timeout`) for replica `i` to exit; its status.
    pub fn wait_exit(&mut self, i: usize, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.replicas[i].child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

fn spawn_replica(locara: &Path, home: &Path, auth: &Path) -> Replica {
    let (port, metrics_port) = (free_port(), free_port());
    let mut child = Command::new(locara)
        .arg("--home")
        .arg(home)
        .args([
            "serve",
            "--http",
            &format!("127.0.0.1:{port}"),
            "--metrics",
            &format!("127.0.0.1:{metrics_port}"),
            "--stateless",
            "--drain-seconds",
            "10",
            "--log",
            "warn",
        ])
        .arg("--auth")
        .arg(auth)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let read = stderr.read_line(&mut line).unwrap();
        assert!(read > 0, "a replica ended before listening:\n{seen}");
        seen.push_str(&line);
        if line.starts_with("listening on ") {
            break;
        }
    }
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    Replica {
        child,
        port,
        metrics_port,
        home: home.to_owned(),
    }
}

/// An MCP client over one keep-alive HTTP/1.1 connection (opened again when the server closes
/// it), for a stateless server: each `tools/call` is one POST answered with JSON.
#[derive(Debug)]
pub struct McpClient {
    addr: String,
    bearer: String,
    stream: Option<BufReader<TcpStream>>,
    next_id: u64,
    /// How many times a request was sent again on a new connection because the old one was
    /// closed before any byte of an answer came back.
    pub reconnects: u64,
}

impl McpClient {
    /// A client of `http://ADDR/mcp` sending `bearer`.
    pub fn new(addr: &str, bearer: &str) -> McpClient {
        McpClient {
            addr: addr.to_owned(),
            bearer: bearer.to_owned(),
            stream: None,
            next_id: 1,
            reconnects: 0,
        }
    }

    /// Calls `tool` with `arguments`: the JSON-RPC answer, or why there is none (an HTTP
    /// status other than 200, or a connection that failed).
    ///
    /// # Errors
    /// A message saying what failed.
    pub fn call(
        &mut self,
        tool: &str,
        arguments: &serde_json::Value,
    ) -> Result<serde_json::Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}})
        .to_string();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n\
             Authorization: Bearer {}\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            self.bearer,
            body.len()
        );
        for attempt in 0..2 {
            let fresh = self.stream.is_none();
            if fresh {
                let stream = TcpStream::connect(&self.addr).map_err(|e| format!("connect: {e}"))?;
                stream.set_nodelay(true).ok();
                stream.set_read_timeout(Some(Duration::from_secs(60))).ok();
                self.stream = Some(BufReader::new(stream));
            }
            let reader = self.stream.as_mut().unwrap();
            match send(reader, &request) {
                Ok((status, text, close)) => {
                    if close {
                        self.stream = None;
                    }
                    if status != 200 {
                        self.stream = None;
                        return Err(format!("HTTP {status}: {text}"));
                    }
                    return serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"));
                }
                // A kept-alive connection the server closed before answering: send again,
                // once, on a new one.
                Err(Closed::BeforeAnswer) if !fresh && attempt == 0 => {
                    self.stream = None;
                    self.reconnects += 1;
                }
                Err(e) => {
                    self.stream = None;
                    return Err(format!("{e:?}"));
                }
            }
        }
        Err("the connection closed twice before an answer".to_owned())
    }
}

#[derive(Debug)]
enum Closed {
    BeforeAnswer,
    #[allow(dead_code, reason = "read by Debug in the error message")]
    Midway(String),
}

/// Writes `request`, reads one answer with a `Content-Length`: (status, body, whether the
/// server closes the connection after it).
fn send(reader: &mut BufReader<TcpStream>, request: &str) -> Result<(u16, String, bool), Closed> {
    if reader.get_mut().write_all(request.as_bytes()).is_err() {
        return Err(Closed::BeforeAnswer);
    }
    let mut status_line = String::new();
    match reader.read_line(&mut status_line) {
        Ok(0) | Err(_) => return Err(Closed::BeforeAnswer),
        Ok(_) => {}
    }
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Closed::Midway(format!("not an HTTP status line: {status_line}")))?;
    let mut length = None;
    let mut close = false;
    loop {
        let mut line = String::new();
        if reader
            .read_line(&mut line)
            .map_err(|e| Closed::Midway(e.to_string()))?
            == 0
        {
            return Err(Closed::Midway("closed in the headers".to_owned()));
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse::<usize>().ok();
            } else if name.eq_ignore_ascii_case("connection") && value.eq_ignore_ascii_case("close")
            {
                close = true;
            }
        }
    }
    let length = length.ok_or_else(|| Closed::Midway("an answer without Content-Length".into()))?;
    let mut body = vec![0; length];
    reader
        .read_exact(&mut body)
        .map_err(|e| Closed::Midway(e.to_string()))?;
    Ok((status, String::from_utf8_lossy(&body).into_owned(), close))
}
