//! A tiny HTTP proxy on 127.0.0.1:0 that records what it was asked for. It speaks CONNECT
//! (what ureq uses for every target) and absolute-form requests (what curl uses for http
//! targets). With `start_mapping`, every target is sent to one address, so a test can use a
//! host name that does not resolve and prove the client went through the proxy.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

pub struct HttpProxy {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
}

impl HttpProxy {
    /// Tunnels every target to `to`, whatever host the client named.
    pub fn start_mapping(to: SocketAddr) -> HttpProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        thread::Builder::new()
            .name("test-proxy-accept".into())
            .spawn(move || {
                for client in listener.incoming().flatten() {
                    let log = log.clone();
                    let _ =
                        thread::Builder::new()
                            .name("test-proxy-conn".into())
                            .spawn(move || {
                                let _ = handle(client, to, &log);
                            });
                }
            })
            .expect("spawn proxy");
        HttpProxy { addr, seen }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Request lines received, e.g. `CONNECT fake.invalid:8080`.
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn handle(client: TcpStream, to: SocketAddr, log: &Mutex<Vec<String>>) -> io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        head.push_str(&line);
        if line == "\r\n" || line == "\n" {
            break;
        }
    }
    let request_line = head.lines().next().unwrap_or("").to_string();
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    log.lock().unwrap().push(format!("{method} {target}"));
    let mut upstream = TcpStream::connect(to)?;
    let mut client_writer = client.try_clone()?;
    if method == "CONNECT" {
        client_writer.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
    } else {
        // Absolute form to origin form: `GET http://host/path HTTP/1.1` -> `GET /path HTTP/1.1`.
        let path = target
            .split_once("://")
            .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
            .unwrap_or("/");
        let rest = head.split_once('\n').map(|(_, r)| r).unwrap_or("");
        upstream.write_all(format!("{method} {path} HTTP/1.1\r\n{rest}").as_bytes())?;
    }
    // Bytes the BufReader already pulled in belong to the tunnel.
    upstream.write_all(reader.buffer())?;
    let mut upstream_reader = upstream.try_clone()?;
    let down = thread::Builder::new()
        .name("test-proxy-down".into())
        .spawn(move || {
            let _ = io::copy(&mut upstream_reader, &mut client_writer);
            let _ = client_writer.shutdown(Shutdown::Both);
        })?;
    let mut client_reader = reader.into_inner();
    let _ = io::copy(&mut client_reader, &mut upstream);
    let _ = upstream.shutdown(Shutdown::Write);
    let _ = down.join();
    Ok(())
}
