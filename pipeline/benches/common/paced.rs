//! What the fleet benches share: agents each sending one window every
//! 10 s, spread evenly, into one worker process, and the worker's lag
//! (windows sent but not stored) and resident memory printed every 10 s,
//! then whether the lag stayed bounded and the memory flat: the last third
//! of the run against the first. Beside them, the share of a core the
//! worker, the broker and the database each used over those 10 s: on 2
//! cores, a lag that grows while the worker's CPU stays flat is another
//! process's doing.

use std::time::{Duration, Instant};

use odp_devstack::ServiceProcess;
use rdkafka::message::OwnedHeaders;
use rdkafka::producer::{FutureProducer, FutureRecord};
use sqlx::PgPool;

/// How often each agent sends a window, and how often the lag is printed.
pub(crate) const WINDOW: Duration = Duration::from_secs(10);

/// The variable `name` as a number, or `default`.
pub(crate) fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A message as an agent publishes it: key, payload, signature headers.
pub(crate) struct Message {
    pub(crate) key: String,
    pub(crate) payload: Vec<u8>,
    pub(crate) headers: OwnedHeaders,
}

/// Publishes `message` to `topic`, waiting for its acknowledgement.
pub(crate) async fn send(producer: FutureProducer, topic: String, message: Message) {
    let record = FutureRecord::to(&topic)
        .key(&message.key)
        .payload(&message.payload)
        .headers(message.headers);
    producer
        .send(record, Duration::from_secs(60))
        .await
        .map_err(|(e, _)| e)
        .expect("produce");
}

/// A paced run: `agents` agents for `run_for` into `worker`, which stores
/// into `pool` (holding `stored_before` windows when the run starts).
pub(crate) struct Paced<'a> {
    pub(crate) pool: &'a PgPool,
    pub(crate) worker: &'a ServiceProcess,
    pub(crate) producer: &'a FutureProducer,
    pub(crate) topic: &'a str,
    pub(crate) agents: usize,
    pub(crate) run_for: Duration,
    pub(crate) stored_before: i64,
}

/// (windows sent, windows stored, worker RSS in KiB) at one report.
type Sample = (u64, i64, u64);

impl Paced<'_> {
    /// Runs the agents: agent `a`'s window `w` (`message(a, w)`) is sent
    /// `w` windows and `a` gaps after the start, without waiting for other
    /// agents' acknowledgements; then waits (up to 120 s) for the worker
    /// to catch up, and prints the summary.
    pub(crate) async fn run(&self, mut message: impl FnMut(usize, u32) -> Message) {
        println!(
            "{:>6}  {:>8}  {:>8}  {:>6}  {:>9}  {:>7}  {:>7}  {:>7}",
            "t (s)", "sent", "stored", "lag", "rss (MiB)", "worker", "broker", "db"
        );
        let mut cpu = Cpu::now(self.worker);
        let started = Instant::now();
        let gap = WINDOW / self.agents as u32;
        let mut sent = 0u64;
        let mut samples: Vec<Sample> = Vec::new();
        let mut next_report = started + WINDOW;
        'run: for window in 0.. {
            for agent in 0..self.agents {
                let due = started + WINDOW * window + gap * agent as u32;
                tokio::time::sleep_until(due.into()).await;
                if started.elapsed() >= self.run_for {
                    break 'run;
                }
                // Not awaited: agents do not wait for each other's acks.
                tokio::spawn(send(
                    self.producer.clone(),
                    self.topic.to_owned(),
                    message(agent, window),
                ));
                sent += 1;
                if Instant::now() >= next_report {
                    next_report += WINDOW;
                    samples.push(self.report(started, sent, &mut cpu).await);
                }
            }
        }
        // Drain: the worker catches up once the agents stop.
        let drain_started = Instant::now();
        while self.stored().await < sent as i64
            && drain_started.elapsed() < Duration::from_secs(120)
        {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let final_sample = self.report(started, sent, &mut cpu).await;
        summarize(&samples, final_sample.1, sent, drain_started.elapsed());
    }

    /// Windows stored since the run started.
    async fn stored(&self) -> i64 {
        stored(self.pool).await - self.stored_before
    }

    /// Prints and returns (sent, stored, rss KiB) now, with the CPU each
    /// process used since `cpu` was read.
    async fn report(&self, started: Instant, sent: u64, cpu: &mut Cpu) -> Sample {
        let stored = self.stored().await;
        let rss = rss_kib(self.worker);
        let now = Cpu::now(self.worker);
        let share = |of: fn(&Cpu) -> f64| {
            let seconds = now.at.duration_since(cpu.at).as_secs_f64();
            format!("{:.0}%", (of(&now) - of(cpu)) / seconds * 100.0)
        };
        println!(
            "{:>6.0}  {:>8}  {:>8}  {:>6}  {:>9.1}  {:>7}  {:>7}  {:>7}",
            started.elapsed().as_secs_f64(),
            sent,
            stored,
            sent as i64 - stored,
            rss as f64 / 1024.0,
            share(|c| c.worker),
            share(|c| c.broker),
            share(|c| c.database)
        );
        *cpu = now;
        (sent, stored, rss)
    }
}

/// CPU seconds used so far by the worker, the broker and the database.
struct Cpu {
    at: Instant,
    worker: f64,
    broker: f64,
    database: f64,
}

impl Cpu {
    fn now(worker: &ServiceProcess) -> Cpu {
        Cpu {
            at: Instant::now(),
            worker: odp_devstack::cpu_seconds(worker.pid()).unwrap_or(0.0),
            broker: odp_devstack::cpu_seconds_of_named("tansu"),
            database: odp_devstack::cpu_seconds_of_named("postgres")
                + odp_devstack::cpu_seconds_of_named("mariadbd"),
        }
    }
}

/// Windows in the store.
pub(crate) async fn stored(pool: &PgPool) -> i64 {
    sqlx::query_scalar("select count(*) from snapshots")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The worker's resident memory in KiB, from /proc.
fn rss_kib(worker: &ServiceProcess) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", worker.pid())).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn summarize(samples: &[Sample], stored: i64, sent: u64, drain: Duration) {
    if samples.len() < 3 {
        println!("run too short to compare thirds");
        return;
    }
    let third = samples.len() / 3;
    let mean = |s: &[Sample], f: fn(&Sample) -> f64| s.iter().map(f).sum::<f64>() / s.len() as f64;
    let lag = |s: &Sample| s.0 as f64 - s.1 as f64;
    let rss = |s: &Sample| s.2 as f64;
    let (first, last) = (&samples[..third], &samples[samples.len() - third..]);
    let max_lag = samples.iter().map(lag).fold(0.0, f64::max);
    println!(
        "stored {stored} of {sent} windows; drained in {:.1} s after the agents stopped",
        drain.as_secs_f64()
    );
    println!(
        "lag: max {max_lag:.0} windows; mean last third / first third = {:.2}x (bounded: ~1x or less)",
        mean(last, lag) / mean(first, lag).max(1.0)
    );
    println!(
        "worker memory: mean last third / first third = {:.2}x ({:.1} → {:.1} MiB; flat: ~1x)",
        mean(last, rss) / mean(first, rss).max(1.0),
        mean(first, rss) / 1024.0,
        mean(last, rss) / 1024.0
    );
}
