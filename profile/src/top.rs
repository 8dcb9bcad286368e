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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::view_of_stacks;

    #[test]
    fn shares_and_errors() {
        let view = view_of_stacks(&[
            (&["main", "hot"], 60),
            (&["main", "warm"], 30),
            (&["main", "f", "f"], 10),
        ]);
        let top = top_functions(&view, 10);
        assert_eq!(top[0].function, "hot");
        assert!((top[0].self_share - 0.6).abs() < 1e-12);
        assert!((top[0].self_share_stderr - (0.6f64 * 0.4 / 100.0).sqrt()).abs() < 1e-12);
        let main = top.iter().find(|f| f.function == "main").unwrap();
        assert_eq!((main.self_samples, main.total_samples), (0, 100));
        let f = top.iter().find(|f| f.function == "f").unwrap();
        assert_eq!(f.total_samples, 10, "recursion counts once per stack");
        assert_eq!(top_functions(&view, 1).len(), 1);
    }
}
