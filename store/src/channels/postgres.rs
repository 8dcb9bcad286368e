//! What channel statements write differently in Postgres.

/// `email_to` is `text[]`: the JSON array bound at `param` as one, in its
/// order (null stays null).
pub(super) fn email_list(param: &str) -> String {
    format!(
        "case when {param} is null then null
              else array(select address from jsonb_array_elements_text({param})
                         with ordinality as t(address, n) order by n) end"
    )
}
