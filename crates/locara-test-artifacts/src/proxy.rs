//! A real forward proxy for tests: Debian's tinyproxy, which tunnels with `CONNECT`.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// tinyproxy, a real CONNECT proxy, on a free loopback port; stopped (by its id) when dropped.
#[derive(Debug)]
pub struct Tinyproxy {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tinyproxy {
    /// Starts tinyproxy, waiting until it accepts connections.
    ///
    /// # Panics
    /// When `tinyproxy` is not installed (`.ci/test-deps` installs it) or does not start.
    pub fn start() -> Tinyproxy {
        let dir = tempfile::tempdir().unwrap();
        let port = crate::free_port();
        let log = dir.path().join("tinyproxy.log");
        let config = dir.path().join("tinyproxy.conf");
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListen 127.0.0.1\nTimeout 30\nMaxClients 20\nAllow 127.0.0.1\n\
                 LogLevel Connect\nLogFile \"{}\"\n",
                log.display()
            ),
        )
        .unwrap();
        let child = Command::new("tinyproxy")
            .arg("-d")
            .arg("-c")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tinyproxy (Debian's `tinyproxy`, which .ci/test-deps installs)");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "tinyproxy did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Tinyproxy {
            child,
            port,
            log,
            _dir: dir,
        }
    }

    /// Its URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The requests it was asked, in order, as its log has them (`CONNECT 127.0.0.1:443 HTTP/1.1`).
    pub fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.split_once("): ").map(|(_, r)| r.to_owned()))
            .filter(|r| r.starts_with("CONNECT") || r.starts_with("GET"))
            .collect()
    }
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
