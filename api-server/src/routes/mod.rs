pub mod flamegraph;
pub mod issues;
pub mod list;
pub mod profiles;
