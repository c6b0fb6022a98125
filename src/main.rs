//! The `tooltap` binary: parse the command line, build the configuration from its layers, set up
//! logging, and run the chosen subcommand on a Tokio runtime. The only place `anyhow` is used;
//! the library returns typed errors and this edge prints them.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use tokio::net::TcpListener;
use tracing_subscriber::EnvFilter;

use tooltap::cli::{Cli, Command, ProxyArgs};
use tooltap::config::{Config, EnvLayer, LogFormat};
use tooltap::proxy::server;
use tooltap::proxy::service::ProxyState;
use tooltap::record::store::fetch::{self, Fetched};
use tooltap::replay::{self, ReplayState, args::ReplayArgs};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Proxy(args) => run_proxy(args),
        Command::Replay(args) => run_replay(args),
        Command::Quirks(args) => {
            print!("{}", tooltap::quirk::list::render(args.format));
            return ExitCode::SUCCESS;
        }
        Command::Check(mut args) => {
            let Some(_fetched) = localize_all(&mut args.paths) else {
                return ExitCode::from(tooltap::check::EXIT_USAGE);
            };
            let code = tooltap::check::run(&args, &mut std::io::stdout(), &mut std::io::stderr());
            return ExitCode::from(code);
        }
        Command::Report(mut args) => {
            let Some(_fetched) = localize_all(&mut args.paths) else {
                return ExitCode::from(2);
            };
            return ExitCode::from(tooltap::report::run(&args, &mut std::io::stderr()));
        }
        Command::Export(mut args) => {
            let Some(_fetched) = localize_all(&mut args.paths) else {
                return ExitCode::from(2);
            };
            let code = tooltap::interop::export::run(&args, &mut std::io::stderr());
            return ExitCode::from(code);
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // `{:#}` prints the context chain on one line; tooltap's own errors are complete
            // messages without a `source()`, so nothing repeats.
            eprintln!("tooltap: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_proxy(args: ProxyArgs) -> anyhow::Result<()> {
    let (config_path, cli_layer) = args.into_layer();
    let env_layer = EnvLayer::read(|name| std::env::var(name).ok())?;
    let config = Config::from_layers(config_path, env_layer, cli_layer)?;
    init_logging(config.log.format);
    let runtime = match config.worker_threads {
        Some(1) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        Some(n) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build(),
        None => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
    }
    .context("cannot start the Tokio runtime")?;
    runtime.block_on(async move {
        // Before binding: a bad CA bundle should fail without ever listening.
        let state = Arc::new(ProxyState::new(Arc::new(config))?);
        let config = state.config.clone();
        let listener = TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        let local = listener.local_addr().context("listener address")?;
        for route in config.routes.iter() {
            tracing::info!(
                route = %route.name,
                prefix = %route.prefix,
                upstream = route.upstream.as_str(),
                "route"
            );
        }
        let (stop_admin, admin_stopped) = tokio::sync::watch::channel(false);
        if let Some(addr) = config.admin.listen {
            let stop = server::StopSignal(admin_stopped);
            let bound = server::start_admin(&state, addr, stop).await?;
            tracing::info!(admin = %bound, "admin listener ready (/metrics, /healthz, /readyz)");
        }
        let violations = config
            .inspect
            .violations
            .as_ref()
            .map_or_else(|| "off".to_string(), |path| path.display().to_string());
        if config.inspect.enabled {
            tracing::info!(violations = %violations, "inspecting");
        } else {
            tracing::info!("inspection off: a plain pass-through");
        }
        if config.inspect.enforce {
            tracing::warn!(
                "enforce mode on: a response that breaks the contract becomes a 502 or an error \
                 event (for CI, not for production traffic)"
            );
        }
        if config.record.mode != tooltap::record::RecordMode::Off {
            tooltap::record::layout::probe_folder(&config.record.dir).with_context(|| {
                format!(
                    "cannot write recordings under {} (--recordings, TOOLTAP_RECORDINGS, \
                     record.dir): give a writable folder, or --record off",
                    config.record.dir.display()
                )
            })?;
        }
        match &config.record.store {
            Some(store) => tracing::info!(
                mode = %config.record.mode,
                store = %store.url,
                spool = %config.record.dir.display(),
                "recordings"
            ),
            None => tracing::info!(
                mode = %config.record.mode,
                dir = %config.record.dir.display(),
                "recordings"
            ),
        }
        // Handlers first: a SIGTERM sent as soon as "ready" is seen must drain, not kill.
        let shutdown = tooltap::proxy::shutdown::signal();
        tracing::info!(listen = %local, "tooltap proxy ready");
        let report = server::serve(state, listener, shutdown).await?;
        let _ = stop_admin.send(true);
        tracing::info!(
            connections_cut = report.connections_cut,
            inspections_left = report.drained.inspections_left,
            writers_left = report.drained.writers_left,
            "stopped"
        );
        Ok(())
    })
}

/// Copies each `s3://bucket/prefix` among `paths` into a temporary folder and puts that folder
/// in its place; the copies are deleted when the returned list is dropped. `None` (the error
/// printed) when a location cannot be read.
fn localize_all(paths: &mut [std::path::PathBuf]) -> Option<Vec<Fetched>> {
    let mut fetched = Vec::new();
    for path in paths {
        match fetch::localize(path) {
            Ok(Some(copy)) => {
                *path = copy.path().to_path_buf();
                fetched.push(copy);
            }
            Ok(None) => {}
            Err(error) => {
                eprintln!("tooltap: {error}");
                return None;
            }
        }
    }
    Some(fetched)
}

fn run_replay(args: ReplayArgs) -> anyhow::Result<()> {
    let (mut settings, log_format) = args.into_settings()?;
    init_logging(log_format);
    // Before the runtime: an `s3://` location is copied once, and served from the copy.
    let location = settings.recordings.display().to_string();
    let _fetched = fetch::localize(&settings.recordings)?.inspect(|copy| {
        tracing::info!(%location, objects = copy.objects, "recordings copied from object storage");
    });
    if let Some(copy) = &_fetched {
        settings.recordings = copy.path().to_path_buf();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the Tokio runtime")?;
    runtime.block_on(async move {
        // Load before binding: a bad recording fails the start without ever listening.
        let state = Arc::new(ReplayState::new(&settings)?);
        let listener = TcpListener::bind(settings.listen)
            .await
            .with_context(|| format!("cannot listen on {}", settings.listen))?;
        let local = listener.local_addr().context("listener address")?;
        let recordings = state.library.read().map_or(0, |library| library.len());
        let shutdown = tooltap::proxy::shutdown::signal();
        tracing::info!(listen = %local, recordings, dir = %settings.recordings.display(), "tooltap replay ready");
        replay::serve(state.clone(), listener, shutdown).await;
        tracing::info!("stopped");
        let unused = state.library.read().map_or(0, |library| library.usage().unused);
        if settings.fail_on_unused && unused > 0 {
            anyhow::bail!("{unused} recordings were never used (--fail-on-unused)");
        }
        Ok(())
    })
}

/// `RUST_LOG` picks verbosity (default `info`); the format comes from the config.
fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colour only on a terminal: files, pipes and `docker logs` get plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stdout().is_terminal());
    match format {
        LogFormat::Human => builder.init(),
        LogFormat::Json => builder.json().with_current_span(true).init(),
    }
}
