//! `tansu broker`: Tansu's Kafka-compatible broker with the arguments ODP's
//! dev stack passes (`odp_devstack::kafka::spawn_tansu`), started as
//! Tansu's own command line starts it (`tansu-cli`'s `broker` command):
//! no schema registry, no TLS, no SASL, no OpenTelemetry export.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tansu_broker::broker::Broker;
use tansu_broker::coordinator::group::administrator::Controller;
use tansu_broker::{otel, TracingFormat, NODE_ID};
use tansu_sans_io::ErrorCode;
use tansu_storage::StorageContainer;
use tokio::time::Instant;
use url::Url;
use uuid::Uuid;

#[derive(Parser)]
#[command(name = "tansu", version, about = "Tansu's Kafka-compatible broker, as ODP's dev stack runs it")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Apache Kafka compatible broker
    Broker(BrokerArgs),
}

#[derive(clap::Args)]
struct BrokerArgs {
    /// All members of the same cluster should use the same id
    #[arg(long, env = "CLUSTER_ID", default_value = "tansu_cluster")]
    cluster_id: String,

    /// The broker will listen on this address
    #[arg(long, env = "LISTENER_URL", default_value = "tcp://0.0.0.0:9092")]
    listener_url: Url,

    /// This location is advertised to clients in metadata
    #[arg(long, env = "ADVERTISED_LISTENER_URL", default_value = "tcp://localhost:9092")]
    advertised_listener_url: Url,

    /// Where topics, offsets and producer state are kept: sqlite://FILE
    /// or memory://tansu/
    #[arg(long, env = "STORAGE_ENGINE", default_value = "memory://tansu/")]
    storage_engine: Url,
}

#[tokio::main]
async fn main() -> ExitCode {
    let _tracing = match otel::init(TracingFormat::Text) {
        Ok(guard) => guard,
        Err(error) => {
            eprintln!("tansu: cannot set up logging: {error}");
            return ExitCode::FAILURE;
        }
    };
    let Command::Broker(args) = Cli::parse().command;
    println!(
        "tansu broker {}\nlistening on: {} (advertised: {})\nstorage: {}",
        env!("CARGO_PKG_VERSION"),
        args.listener_url,
        args.advertised_listener_url,
        args.storage_engine
    );
    let started = Instant::now();
    let broker = Broker::<Controller<StorageContainer>, StorageContainer>::builder()
        .node_id(NODE_ID)
        .cluster_id(args.cluster_id)
        .incarnation_id(Uuid::now_v7())
        .advertised_listener(args.advertised_listener_url)
        .storage(args.storage_engine)
        .listener(args.listener_url);
    match broker.build().await {
        Ok(broker) => match broker.main(started).await {
            Ok(ErrorCode::None) => ExitCode::SUCCESS,
            Ok(code) => {
                tracing::error!("{code}");
                ExitCode::FAILURE
            }
            Err(error) => {
                tracing::error!("{error:?}");
                ExitCode::FAILURE
            }
        },
        Err(error) => {
            tracing::error!("{error:?}");
            ExitCode::FAILURE
        }
    }
}
