//! A small real SMTP server for tests: it speaks enough of RFC 5321 over
//! TCP (EHLO/HELO, MAIL, RCPT, DATA with dot-unstuffing, RSET, NOOP, QUIT)
//! for a real client such as lettre, keeps every accepted message, and can
//! refuse its first messages with a transient `451` to exercise retries.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One message as the sink took it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Mail {
    pub(crate) from: String,
    pub(crate) to: Vec<String>,
    /// Headers and body, CRLF line ends, dot-unstuffed.
    pub(crate) data: String,
}

#[derive(Debug, Default)]
struct Log {
    accepted: Vec<Mail>,
    /// Messages whose data was received, accepted or not.
    transactions: usize,
}

/// A running sink; it serves until the test's runtime ends.
#[derive(Debug, Clone)]
pub(crate) struct SmtpSink {
    pub(crate) port: u16,
    log: Arc<Mutex<Log>>,
}

impl SmtpSink {
    /// Starts on a free loopback port; the first `refuse_first` messages
    /// get `451` after their data.
    pub(crate) async fn start(refuse_first: usize) -> SmtpSink {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let log: Arc<Mutex<Log>> = Arc::default();
        let shared = log.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let log = shared.clone();
                tokio::spawn(async move {
                    // A client hanging up mid-session is its business.
                    let _ = serve(stream, log, refuse_first).await;
                });
            }
        });
        SmtpSink { port, log }
    }

    pub(crate) fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    pub(crate) fn accepted(&self) -> Vec<Mail> {
        self.log.lock().unwrap().accepted.clone()
    }

    pub(crate) fn transactions(&self) -> usize {
        self.log.lock().unwrap().transactions
    }
}

async fn serve(
    stream: TcpStream,
    log: Arc<Mutex<Log>>,
    refuse_first: usize,
) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    write.write_all(b"220 sink.test ESMTP ready\r\n").await?;
    let mut mail = Mail::default();
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let command = line.trim_end().to_owned();
        let upper = command.to_ascii_uppercase();
        let reply: &[u8] = if upper.starts_with("EHLO") {
            b"250-sink.test\r\n250 8BITMIME\r\n"
        } else if upper.starts_with("HELO") || upper == "NOOP" {
            b"250 ok\r\n"
        } else if upper == "RSET" {
            mail = Mail::default();
            b"250 ok\r\n"
        } else if let Some(from) = upper.strip_prefix("MAIL FROM:") {
            mail = Mail::default();
            mail.from = address(&command[command.len() - from.len()..]);
            b"250 ok\r\n"
        } else if let Some(to) = upper.strip_prefix("RCPT TO:") {
            mail.to.push(address(&command[command.len() - to.len()..]));
            b"250 ok\r\n"
        } else if upper == "DATA" {
            write
                .write_all(b"354 end data with <CR><LF>.<CR><LF>\r\n")
                .await?;
            mail.data = read_data(&mut lines).await?;
            let mut log = log.lock().unwrap();
            log.transactions += 1;
            if log.transactions <= refuse_first {
                b"451 4.3.0 try again later\r\n"
            } else {
                log.accepted.push(std::mem::take(&mut mail));
                b"250 2.0.0 queued\r\n"
            }
        } else if upper == "QUIT" {
            write.write_all(b"221 bye\r\n").await?;
            return Ok(());
        } else {
            b"502 command not implemented\r\n"
        };
        write.write_all(reply).await?;
    }
}

/// `<a@b> SIZE=...` → `a@b`.
fn address(argument: &str) -> String {
    let argument = argument.trim();
    let end = argument.find('>').unwrap_or(argument.len());
    argument[..end].trim_start_matches('<').to_owned()
}

/// Message data up to the lone `.` line, with leading dots unstuffed.
async fn read_data(
    lines: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
) -> std::io::Result<String> {
    let mut data = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if line == ".\r\n" {
            return Ok(data);
        }
        data.push_str(line.strip_prefix('.').unwrap_or(&line));
    }
}
