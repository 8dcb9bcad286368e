//! A debuginfod client: the debug file of a stripped module, by build id,
//! from the servers `DEBUGINFOD_URLS` names (as elfutils, gdb and perf
//! read it), cached on disk.
//!
//! Symbolization runs on each profile's sampling thread, which must never
//! wait on the network. So [`Debuginfod::request`] only queues the build
//! id; one fetch thread per client downloads (one file at a time, with a
//! current-thread tokio runtime of its own for reqwest), verifies and
//! caches the file, then bumps [`Debuginfod::generation`]. A profile's
//! symbolizer sees the bump before its next batch, drops what it cached
//! for the modules that were waiting, and reads them again, this time
//! with the cached file: samples taken before keep the module grouping
//! (`[libfoo.so]`), later windows get function names.
//!
//! Each build id is fetched once per client (the agent has one); a failure
//! is remembered too and retried after [`RETRY_AFTER`]. A downloaded file
//! is only kept when it parses as ELF and carries the build id asked for:
//! a server cannot plant symbols for another module.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use object::{Object, ReadCache};
use tracing::{debug, info, warn};

/// The environment variable naming the servers, space-separated.
pub const URLS_ENV: &str = "DEBUGINFOD_URLS";
/// The environment variable naming the cache directory.
pub const CACHE_ENV: &str = "DEBUGINFOD_CACHE_PATH";
/// The largest debug file downloaded: libxul's is a few hundred MiB, and
/// a server must not fill the agent's disk.
pub const MAX_DOWNLOAD: u64 = 512 << 20;
/// How long connecting to a server may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one request may take, body included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a failed build id is left alone: a server that was down, or a
/// package whose debug file gets indexed later, is asked again.
pub const RETRY_AFTER: Duration = Duration::from_secs(120);
/// Which servers to ask and where their files are kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DebuginfodSettings {
    /// Server base URLs; none turns the client off.
    pub urls: Vec<String>,
    /// Files land in `<cache_dir>/<hex build id>/debuginfo`, elfutils'
    /// layout, so a cache shared with gdb works both ways.
    pub cache_dir: PathBuf,
}

impl DebuginfodSettings {
    /// `DEBUGINFOD_URLS` and the cache: `DEBUGINFOD_CACHE_PATH`, else
    /// `debuginfod` in `state_dir`, else elfutils' own default.
    pub fn from_env(state_dir: Option<&Path>) -> Self {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        DebuginfodSettings {
            urls: parse_urls(&var(URLS_ENV).unwrap_or_default().to_string_lossy()),
            cache_dir: cache_dir(var(CACHE_ENV).map(PathBuf::from), state_dir),
        }
    }
}

/// The server URLs of a `DEBUGINFOD_URLS` value (space-separated).
pub fn parse_urls(value: &str) -> Vec<String> {
    value.split_whitespace().map(str::to_owned).collect()
}

/// The cache directory: the explicit one, else the state directory's,
/// else `$XDG_CACHE_HOME/debuginfod_client` or
/// `~/.cache/debuginfod_client` as elfutils has it.
pub fn cache_dir(explicit: Option<PathBuf>, state_dir: Option<&Path>) -> PathBuf {
    if let Some(dir) = explicit {
        return dir;
    }
    if let Some(state) = state_dir {
        return state.join("debuginfod");
    }
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    let cache_home = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|home| Path::new(&home).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache_home.join("debuginfod_client")
}

/// Lower-case hex, as URLs and the cache name build ids.
pub fn hex(build_id: &[u8]) -> String {
    build_id.iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a debug file was not fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("HTTP: {0}")]
    Http(#[from] reqwest::Error),
    #[error("server answered {0}")]
    Status(reqwest::StatusCode),
    #[error("larger than {MAX_DOWNLOAD} bytes")]
    TooLarge,
    #[error("cache: {0}")]
    Io(#[from] io::Error),
    #[error(transparent)]
    Refused(#[from] VerifyError),
}

/// Why a downloaded file is not the module's debug file.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("not an ELF file: {0}")]
    NotElf(object::Error),
    #[error("build id {found} instead of {expected}")]
    OtherBuildId { expected: String, found: String },
}

/// Checks that `file` is an ELF file of build id `build_id`.
pub fn verify_debug_file(file: File, build_id: &[u8]) -> Result<(), VerifyError> {
    let cache = ReadCache::new(file);
    let elf = object::File::parse(&cache).map_err(VerifyError::NotElf)?;
    let found = elf.build_id().ok().flatten().unwrap_or_default();
    if found == build_id {
        Ok(())
    } else {
        Err(VerifyError::OtherBuildId {
            expected: hex(build_id),
            found: hex(found),
        })
    }
}

/// Where a build id stands with a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchStatus {
    /// Never asked for.
    Unknown,
    /// Queued or downloading.
    Pending,
    /// In the cache.
    Fetched,
    /// No server had it (or it was refused); asked again after
    /// [`RETRY_AFTER`].
    Failed,
}

#[derive(Debug, Clone, Copy)]
enum Entry {
    Pending,
    Fetched,
    Failed(Instant),
}

/// What the fetch thread and the client share.
#[derive(Debug, Default)]
struct Shared {
    entries: Mutex<HashMap<Vec<u8>, Entry>>,
    /// Bumped once per file fetched.
    generation: AtomicU64,
}

impl Shared {
    fn entries(&self) -> MutexGuard<'_, HashMap<Vec<u8>, Entry>> {
        // A panic elsewhere while holding it leaves a usable map.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A debuginfod client. Dropping it ends its fetch thread after the
/// download under way.
#[derive(Debug)]
pub struct Debuginfod {
    urls: Vec<reqwest::Url>,
    cache_dir: PathBuf,
    shared: Arc<Shared>,
    /// The fetch thread's queue, started with the first request.
    queue: Mutex<Option<Sender<Vec<u8>>>>,
}

impl Debuginfod {
    /// A client of the settings' usable servers, or `None` when there are
    /// none. Only `http` and `https` URLs are used, `https` only when the
    /// system's CA bundle is there to check servers with.
    pub fn new(settings: &DebuginfodSettings) -> Option<Arc<Self>> {
        let has_roots = crate::ca_bundle::system_ca_bundle().is_some();
        let urls: Vec<reqwest::Url> = settings
            .urls
            .iter()
            .filter_map(|raw| {
                let url = reqwest::Url::parse(raw.trim_end_matches('/'))
                    .map_err(|e| warn!(url = %raw, error = %e, "debuginfod URL ignored"))
                    .ok()?;
                match url.scheme() {
                    "http" => Some(url),
                    "https" if has_roots => Some(url),
                    scheme => {
                        warn!(url = %raw, scheme, "debuginfod URL ignored: only http, and https with a CA bundle");
                        None
                    }
                }
            })
            .collect();
        if urls.is_empty() {
            return None;
        }
        info!(servers = ?urls.iter().map(reqwest::Url::as_str).collect::<Vec<_>>(), cache = %settings.cache_dir.display(), "debuginfod client on");
        Some(Arc::new(Debuginfod {
            urls,
            cache_dir: settings.cache_dir.clone(),
            shared: Arc::default(),
            queue: Mutex::new(None),
        }))
    }

    /// Where the debug file of `build_id` is cached.
    pub fn cache_path(&self, build_id: &[u8]) -> PathBuf {
        self.cache_dir.join(hex(build_id)).join("debuginfo")
    }

    /// The cached debug file of `build_id`, if there is one.
    pub fn cached(&self, build_id: &[u8]) -> Option<PathBuf> {
        let path = self.cache_path(build_id);
        path.is_file().then_some(path)
    }

    /// Asks for the debug file of `build_id` without waiting: queued
    /// unless already fetched, under way, or failed less than
    /// [`RETRY_AFTER`] ago.
    pub fn request(&self, build_id: &[u8]) {
        if build_id.is_empty() {
            return;
        }
        {
            let mut entries = self.shared.entries();
            match entries.get(build_id) {
                Some(Entry::Pending | Entry::Fetched) => return,
                Some(Entry::Failed(at)) if at.elapsed() < RETRY_AFTER => return,
                _ => {}
            }
            entries.insert(build_id.to_vec(), Entry::Pending);
        }
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let sender = queue.get_or_insert_with(|| self.start_fetcher());
        if sender.send(build_id.to_vec()).is_err() {
            // The thread could not start or died: fail, retry later.
            *queue = None;
            self.shared
                .entries()
                .insert(build_id.to_vec(), Entry::Failed(Instant::now()));
        }
    }

    /// Where `build_id` stands.
    pub fn status(&self, build_id: &[u8]) -> FetchStatus {
        match self.shared.entries().get(build_id) {
            None => FetchStatus::Unknown,
            Some(Entry::Pending) => FetchStatus::Pending,
            Some(Entry::Fetched) => FetchStatus::Fetched,
            Some(Entry::Failed(_)) => FetchStatus::Failed,
        }
    }

    /// How many files were fetched so far: when it changes, modules
    /// waiting for one are worth reading again.
    pub fn generation(&self) -> u64 {
        self.shared.generation.load(Ordering::Acquire)
    }

    fn start_fetcher(&self) -> Sender<Vec<u8>> {
        let (sender, receiver) = mpsc::channel();
        let fetcher = Fetcher {
            urls: self.urls.clone(),
            cache_dir: self.cache_dir.clone(),
            shared: Arc::clone(&self.shared),
        };
        let started = std::thread::Builder::new()
            .name("odp-debuginfod".into())
            .spawn(move || fetcher.run(receiver));
        if let Err(e) = started {
            warn!(error = %e, "cannot start the debuginfod thread");
        }
        sender
    }
}

/// The fetch thread's half.
struct Fetcher {
    urls: Vec<reqwest::Url>,
    cache_dir: PathBuf,
    shared: Arc<Shared>,
}

impl Fetcher {
    /// Fetches queued build ids until the client is dropped.
    fn run(self, queue: Receiver<Vec<u8>>) {
        let setup = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
            .and_then(|runtime| Ok((runtime, http_client().map_err(|e| e.to_string())?)));
        if let Err(e) = &setup {
            // Requests then fail: stripped modules stay grouped.
            warn!(error = %e, "debuginfod thread cannot fetch");
        }
        while let Ok(build_id) = queue.recv() {
            let entry = match &setup {
                Ok((runtime, client)) => match runtime.block_on(self.fetch(client, &build_id)) {
                    Ok(path) => {
                        info!(build_id = %hex(&build_id), path = %path.display(), "debug file fetched");
                        Entry::Fetched
                    }
                    Err(e) => {
                        debug!(build_id = %hex(&build_id), error = %e, "no debug file from debuginfod");
                        Entry::Failed(Instant::now())
                    }
                },
                Err(_) => Entry::Failed(Instant::now()),
            };
            self.shared.entries().insert(build_id, entry);
            if matches!(entry, Entry::Fetched) {
                self.shared.generation.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// Asks each server in turn; the first verified file is cached.
    async fn fetch(
        &self,
        client: &reqwest::Client,
        build_id: &[u8],
    ) -> Result<PathBuf, FetchError> {
        let dir = self.cache_dir.join(hex(build_id));
        fs::create_dir_all(&self.cache_dir)?;
        let mut last = FetchError::Status(reqwest::StatusCode::NOT_FOUND);
        for base in &self.urls {
            let url = format!(
                "{}/buildid/{}/debuginfo",
                base.as_str().trim_end_matches('/'),
                hex(build_id)
            );
            match self.download(client, &url, build_id).await {
                Ok(file) => {
                    fs::create_dir_all(&dir)?;
                    let target = dir.join("debuginfo");
                    file.persist(&target).map_err(|e| e.error)?;
                    return Ok(target);
                }
                Err(e) => {
                    debug!(%url, error = %e, "debuginfod server has no usable file");
                    last = e;
                }
            }
        }
        Err(last)
    }

    /// Downloads one URL into a temporary file of the cache directory (so
    /// that the rename into place is atomic) and verifies it.
    async fn download(
        &self,
        client: &reqwest::Client,
        url: &str,
        build_id: &[u8],
    ) -> Result<tempfile::NamedTempFile, FetchError> {
        let mut response = client.get(url).send().await?;
        if !response.status().is_success() {
            return Err(FetchError::Status(response.status()));
        }
        if response
            .content_length()
            .is_some_and(|len| len > MAX_DOWNLOAD)
        {
            return Err(FetchError::TooLarge);
        }
        let mut file = tempfile::Builder::new()
            .prefix(".download-")
            .tempfile_in(&self.cache_dir)?;
        let mut written = 0u64;
        while let Some(chunk) = response.chunk().await? {
            written += chunk.len() as u64;
            if written > MAX_DOWNLOAD {
                return Err(FetchError::TooLarge);
            }
            file.write_all(&chunk)?;
        }
        file.flush()?;
        verify_debug_file(file.reopen()?, build_id)?;
        Ok(file)
    }
}

/// reqwest with the workspace's features has no built-in roots: `https`
/// servers are checked against the system's CA bundle.
fn http_client() -> reqwest::Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(REQUEST_TIMEOUT)
        .user_agent(concat!("odp-profiler-service/", env!("CARGO_PKG_VERSION")));
    if let Some(pem) = crate::ca_bundle::system_ca_bundle().and_then(|path| fs::read(path).ok()) {
        match reqwest::Certificate::from_pem_bundle(&pem) {
            Ok(certs) => {
                for cert in certs {
                    builder = builder.add_root_certificate(cert);
                }
            }
            Err(e) => warn!(error = %e, "CA bundle unreadable: https debuginfod servers will fail"),
        }
    }
    builder.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_split_on_whitespace_and_filtered_by_scheme() {
        assert_eq!(
            parse_urls(" http://a:8002  https://b/x\thttp://c/ "),
            ["http://a:8002", "https://b/x", "http://c/"]
        );
        let settings = DebuginfodSettings {
            urls: parse_urls("ftp://a file:///etc http://b:8002/ not-a-url"),
            cache_dir: "/nonexistent".into(),
        };
        let client = Debuginfod::new(&settings).unwrap();
        assert_eq!(client.urls.len(), 1);
        assert_eq!(client.urls[0].as_str(), "http://b:8002/");
        let none = DebuginfodSettings {
            urls: parse_urls("ftp://a"),
            cache_dir: "/nonexistent".into(),
        };
        assert!(Debuginfod::new(&none).is_none());
    }

    #[test]
    fn the_cache_follows_elfutils_layout() {
        assert_eq!(
            cache_dir(Some("/c".into()), Some(Path::new("/state"))),
            Path::new("/c")
        );
        assert_eq!(
            cache_dir(None, Some(Path::new("/state"))),
            Path::new("/state/debuginfod")
        );
        let settings = DebuginfodSettings {
            urls: vec!["http://127.0.0.1:1".into()],
            cache_dir: "/c".into(),
        };
        let client = Debuginfod::new(&settings).unwrap();
        assert_eq!(
            client.cache_path(&[0xab, 0x01, 0xff]),
            Path::new("/c/ab01ff/debuginfo")
        );
    }

    #[test]
    fn an_unreachable_server_fails_once_and_is_not_asked_again_at_once() {
        let dir = tempfile::tempdir().unwrap();
        // Port 1 on loopback: refused at once.
        let settings = DebuginfodSettings {
            urls: vec!["http://127.0.0.1:1".into()],
            cache_dir: dir.path().to_owned(),
        };
        let client = Debuginfod::new(&settings).unwrap();
        let id = [1, 2, 3, 4];
        assert_eq!(client.status(&id), FetchStatus::Unknown);
        client.request(&id);
        let deadline = Instant::now() + Duration::from_secs(30);
        while client.status(&id) == FetchStatus::Pending && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(client.status(&id), FetchStatus::Failed);
        client.request(&id);
        assert_eq!(
            client.status(&id),
            FetchStatus::Failed,
            "not before the retry delay"
        );
        assert_eq!(client.generation(), 0);
        assert!(client.cached(&id).is_none());
    }
}
