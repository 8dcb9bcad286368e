pub mod flamegraph;
pub mod hosts;
pub mod issues;
pub mod list;
pub mod profiles;
