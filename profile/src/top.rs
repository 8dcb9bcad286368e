//! The hottest functions of a selection, from per-node counts: self
//! samples where the function is the leaf, total samples where it is on
//! the stack (once per stack, however deep the recursion), each share with
//! its binomial error bound.

use odp_core::stats::FunctionShare;

use crate::view::View;

/// Functions by self samples, largest first (then by total, then name),
/// at most `limit`.
pub fn top_functions(view: &View, limit: usize) -> Vec<FunctionShare> {
    crate::many::top_functions(&[view], limit)
}
