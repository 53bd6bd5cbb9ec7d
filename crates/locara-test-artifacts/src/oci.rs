//! A real OCI registry for tests: Debian's `docker-registry` (the CNCF distribution registry),
//! on a free loopback port, storing into a temporary directory.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// `docker-registry serve` on 127.0.0.1; stopped (by its id) when dropped. Its upload
/// locations are relative URLs, as behind a TLS-terminating proxy, so the same registry serves
/// plain HTTP on its port and HTTPS through a `TlsFront`.
#[derive(Debug)]
pub struct DockerRegistry {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl DockerRegistry {
    /// Starts the registry, waiting until it answers `GET /v2/`.
    ///
    /// # Panics
    /// When `docker-registry` is not installed (`.ci/test-deps` installs it) or does not start.
    pub fn start() -> DockerRegistry {
        let dir = tempfile::tempdir().unwrap();
        let port = crate::free_port();
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n  \
                 delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: locara-tests\n  \
                 relativeurls: true\n",
                dir.path().join("data").display()
            ),
        )
        .unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("docker-registry (Debian's `docker-registry`, which .ci/test-deps installs)");
        let registry = DockerRegistry { child, port, dir };
        let started = Instant::now();
        while !registry.answers() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "docker-registry did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        registry
    }

    /// Whether `GET /v2/` answers 200.
    fn answers(&self) -> bool {
        use std::io::{Read as _, Write as _};
        let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let request = format!(
            "GET /v2/ HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            self.port
        );
        let mut answer = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut answer).is_ok()
            && answer.starts_with("HTTP/1.1 200")
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The file holding the blob `sha256:HEX` in the registry's storage (to tamper with it).
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        self.storage()
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// The registry's storage directory.
    pub fn storage(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The temporary directory its config and storage live in.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for DockerRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
