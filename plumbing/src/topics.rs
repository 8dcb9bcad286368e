//! The four topics of ODP (see DESIGN.md): their names, flags and
//! partition counts.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The four topics of ODP (see DESIGN.md), with their names.
///
/// Every service takes all four flags, so one set of `ODP_TOPIC_*`
/// variables configures a deployment; each uses the topics it needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
pub struct Topics {
    /// Topic the api-server sends signed commands to.
    #[arg(
        long = "topic-commands",
        env = "ODP_TOPIC_COMMANDS",
        default_value = "odp.commands"
    )]
    pub commands: String,
    /// Topic agents publish snapshots to.
    #[arg(
        long = "topic-stacks",
        env = "ODP_TOPIC_STACKS",
        default_value = "odp.stacks"
    )]
    pub stacks: String,
    /// Topic of agents' heartbeats and lifecycle events.
    #[arg(
        long = "topic-events",
        env = "ODP_TOPIC_EVENTS",
        default_value = "odp.events"
    )]
    pub events: String,
    /// Topic undecodable messages are copied to, with the reason.
    #[arg(
        long = "topic-dead-letter",
        env = "ODP_TOPIC_DEAD_LETTER",
        default_value = "odp.dead-letter"
    )]
    pub dead_letter: String,
}

/// A topic flag given an empty name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("{0} must not be empty")]
pub struct EmptyTopic(pub &'static str);

/// A topic to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSpec {
    pub name: String,
    pub partitions: i32,
}

impl Default for Topics {
    fn default() -> Self {
        Self::with_prefix("")
    }
}

impl Topics {
    pub const COMMANDS_PARTITIONS: i32 = 4;
    pub const STACKS_PARTITIONS: i32 = 4;
    pub const EVENTS_PARTITIONS: i32 = 1;
    pub const DEAD_LETTER_PARTITIONS: i32 = 1;

    /// The default names with `prefix` in front, e.g. `t42-odp.commands`,
    /// so parallel tests on one broker own their topics.
    pub fn with_prefix(prefix: &str) -> Self {
        Self {
            commands: format!("{prefix}odp.commands"),
            stacks: format!("{prefix}odp.stacks"),
            events: format!("{prefix}odp.events"),
            dead_letter: format!("{prefix}odp.dead-letter"),
        }
    }

    /// The topics with their partition counts.
    pub fn specs(&self) -> Vec<TopicSpec> {
        let spec = |name: &String, partitions| TopicSpec {
            name: name.clone(),
            partitions,
        };
        vec![
            spec(&self.commands, Self::COMMANDS_PARTITIONS),
            spec(&self.stacks, Self::STACKS_PARTITIONS),
            spec(&self.events, Self::EVENTS_PARTITIONS),
            spec(&self.dead_letter, Self::DEAD_LETTER_PARTITIONS),
        ]
    }

    /// Checks that no name is empty (a flag given as `--topic-stacks ""`).
    pub fn validate(&self) -> Result<(), EmptyTopic> {
        for (flag, name) in self.by_flag() {
            if name.trim().is_empty() {
                return Err(EmptyTopic(flag));
            }
        }
        Ok(())
    }

    /// The topic flags every ODP service takes:
    /// `--topic-commands X --topic-stacks Y --topic-events Z --topic-dead-letter W`.
    pub fn cli_args(&self) -> Vec<String> {
        self.by_flag()
            .into_iter()
            .flat_map(|(flag, name)| [flag.to_owned(), name.clone()])
            .collect()
    }

    /// Each name with the flag that sets it.
    fn by_flag(&self) -> [(&'static str, &String); 4] {
        [
            ("--topic-commands", &self.commands),
            ("--topic-stacks", &self.stacks),
            ("--topic-events", &self.events),
            ("--topic-dead-letter", &self.dead_letter),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        topics: Topics,
    }

    #[test]
    fn flags_default_to_the_design_names_and_round_trip() {
        let defaults = Flags::parse_from(["x"]).topics;
        assert_eq!(defaults, Topics::default());
        assert_eq!(defaults.dead_letter, "odp.dead-letter");
        let mine = Topics::with_prefix("t7-");
        let args = std::iter::once("x".to_owned()).chain(mine.cli_args());
        assert_eq!(Flags::parse_from(args).topics, mine);
        let args = ["x", "--topic-events", " "];
        assert_eq!(
            Flags::parse_from(args).topics.validate(),
            Err(EmptyTopic("--topic-events"))
        );
    }
}
