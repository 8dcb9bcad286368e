//! An update of one row from a patch: what the patch gives changes, the
//! rest stays, and `updated_at` becomes now. Each area names its columns
//! and values; the parameters are numbered here.

use super::{Arg, Sql};

/// The `set` clauses of an update of one row, with their arguments.
#[must_use = "a patch does nothing until its update is run"]
pub(crate) struct Patch {
    table: &'static str,
    sets: Vec<String>,
    args: Vec<Arg>,
}

impl Patch {
    /// A patch of a row of `table` that changes nothing yet.
    pub(super) fn of(table: &'static str) -> Patch {
        Patch {
            table,
            sets: Vec::new(),
            args: Vec::new(),
        }
    }

    /// Binds `value` to the next parameter and returns it: `$2` first, as
    /// `$1` is the row's key.
    fn param(&mut self, value: impl Into<Arg>) -> String {
        self.args.push(value.into());
        format!("${}", self.args.len() + 1)
    }

    /// `column` takes `value`, unless that is null: then it stays.
    pub(crate) fn keep_unless_given(mut self, column: &str, value: impl Into<Arg>) -> Patch {
        let value = self.param(value);
        self.sets
            .push(format!("{column} = coalesce({value}, {column})"));
        self
    }

    /// `column` takes `value`, null included, when `changes`; else it
    /// stays (`value` is then a null of the column's type).
    pub(crate) fn replace_if(
        mut self,
        changes: bool,
        column: &str,
        value: impl Into<Arg>,
    ) -> Patch {
        let changes = self.param(changes);
        let value = self.param(value);
        self.sets.push(format!(
            "{column} = case when {changes} then {value} else {column} end"
        ));
        self
    }

    /// `column` takes `value`.
    pub(crate) fn set(mut self, column: &str, value: impl Into<Arg>) -> Patch {
        let value = self.param(value);
        self.sets.push(format!("{column} = {value}"));
        self
    }

    /// The update of the row whose `key` column holds `value`.
    pub(crate) fn of_row(self, key: &str, value: impl Into<Arg>) -> Sql {
        let update = Sql::new(format!(
            "update {} set {}, updated_at = {{now}} where {key} = $1",
            self.table,
            self.sets.join(", ")
        ))
        .bind(value);
        self.args.into_iter().fold(update, Sql::bind)
    }
}
