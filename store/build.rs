// `sqlx::migrate!` embeds the migrations at compile time; without this a
// changed or added migration would not reach the binaries until something
// else made the crate recompile.
fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
