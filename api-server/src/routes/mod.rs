pub mod flamegraph;
pub mod profiles;
