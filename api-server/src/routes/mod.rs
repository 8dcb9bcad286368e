pub mod flamegraph;
pub mod list;
pub mod profiles;
