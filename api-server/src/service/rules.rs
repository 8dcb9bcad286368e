//! Rules as admins write them: a body checked into the [`RuleDef`] the
//! store keeps (texts, link, service names, and the kind, spec and
//! thresholds compiled as the pipeline will), for a new rule, a
//! replacement or a change of some settings; and the stored rules, each
//! with its latest re-analysis, as the API shows them.

use odp_api_types::{Reanalysis, Rule, RuleBody, RulePatch, RuleView};
use odp_rules::RuleDef;
use odp_store::{Database, RuleRow};

use crate::service_error::ServiceError;
use crate::validate::validate_name;
use crate::views;

/// Every rule, seed and user.
pub(crate) async fn list(db: &Database) -> Result<Vec<Rule>, ServiceError> {
    let rules = odp_store::list_rules(db).await?;
    Ok(rules.into_iter().map(views::rule).collect())
}

/// Stores the new rule `body` asks for and queues its re-analysis.
pub(crate) async fn create(
    db: &Database,
    body: RuleBody,
    by: &str,
) -> Result<RuleView, ServiceError> {
    let rule = new_rule(body)?;
    let (rule, job) = odp_store::create_user_rule(db, &rule, by)
        .await?
        .ok_or_else(|| ServiceError::Conflict(format!("rule {} exists", rule.id)))?;
    Ok(view(rule, Some(job)))
}

/// Rule `id` with its latest re-analysis.
pub(crate) async fn describe(db: &Database, id: &str) -> Result<RuleView, ServiceError> {
    let rule = load(db, id).await?;
    let reanalysis = odp_store::latest_reanalysis(db, id).await?;
    Ok(view(rule, reanalysis))
}

/// Replaces rule `id` by `body` and queues its re-analysis.
pub(crate) async fn replace(
    db: &Database,
    id: String,
    body: RuleBody,
    by: &str,
) -> Result<RuleView, ServiceError> {
    save(db, replacement(id, body)?, by).await
}

/// Changes the settings of rule `id` that `patch` gives and queues its
/// re-analysis.
pub(crate) async fn change(
    db: &Database,
    id: &str,
    patch: RulePatch,
    by: &str,
) -> Result<RuleView, ServiceError> {
    let current = load(db, id).await?.rule;
    save(db, patched(current, patch)?, by).await
}

/// The latest re-analysis of rule `id`'s changes.
pub(crate) async fn latest_reanalysis(db: &Database, id: &str) -> Result<Reanalysis, ServiceError> {
    load(db, id).await?;
    odp_store::latest_reanalysis(db, id)
        .await?
        .map(views::reanalysis)
        .ok_or_else(|| ServiceError::NotFound(format!("rule {id} was never re-analysed")))
}

async fn load(db: &Database, id: &str) -> Result<RuleRow, ServiceError> {
    odp_store::get_rule(db, id)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("no rule {id}")))
}

async fn save(db: &Database, rule: RuleDef, by: &str) -> Result<RuleView, ServiceError> {
    let (rule, job) = odp_store::update_user_rule(db, &rule, by)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("no rule {}", rule.id)))?;
    Ok(view(rule, Some(job)))
}

/// The rule with its latest re-analysis, as the API shows them.
fn view(rule: RuleRow, reanalysis: Option<odp_store::Reanalysis>) -> RuleView {
    RuleView {
        rule: views::rule(rule),
        reanalysis: reanalysis.map(views::reanalysis),
    }
}

/// Most per-service threshold overrides on one rule.
const MAX_SERVICE_THRESHOLDS: usize = 256;

/// A new rule: its id comes in the body.
fn new_rule(body: RuleBody) -> Result<RuleDef, ServiceError> {
    let id = body.id.clone().ok_or_else(|| invalid("id is required"))?;
    validated(id, body)
}

/// Rule `id` replaced by `body`, which may repeat the id but not name
/// another.
fn replacement(id: String, body: RuleBody) -> Result<RuleDef, ServiceError> {
    if body.id.as_ref().is_some_and(|body_id| *body_id != id) {
        return Err(invalid("the body's id differs from the path's"));
    }
    validated(id, body)
}

/// `current` with the settings `patch` gives, checked again as a whole.
fn patched(current: RuleDef, patch: RulePatch) -> Result<RuleDef, ServiceError> {
    let body = RuleBody {
        id: None,
        title: current.title,
        explanation: current.explanation,
        fix: current.fix,
        link: current.link,
        kind: current.kind,
        spec: patch.spec.unwrap_or(current.spec),
        threshold_pct: patch.threshold_pct.unwrap_or(current.threshold_pct),
        service_thresholds: patch
            .service_thresholds
            .unwrap_or(current.service_thresholds),
        enabled: patch.enabled.unwrap_or(current.enabled),
    };
    validated(current.id, body)
}

fn invalid(message: impl Into<String>) -> ServiceError {
    ServiceError::Invalid(message.into())
}

fn check_text(field: &str, value: &str, max: usize) -> Result<(), ServiceError> {
    if value.trim().is_empty() || value.chars().count() > max {
        return Err(invalid(format!("{field} must be 1 to {max} characters")));
    }
    Ok(())
}

fn check_id(id: &str) -> Result<(), ServiceError> {
    let valid = (1..=63).contains(&id.len())
        && id.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '-' | '_'));
    if !valid {
        return Err(invalid(
            "id must be 1 to 63 lower-case letters, digits, `.`, `-` or `_`",
        ));
    }
    Ok(())
}

/// Checks what the store cannot: texts, the link, service names, and (by
/// compiling it as the pipeline will) the kind, spec and thresholds.
fn validated(id: String, body: RuleBody) -> Result<RuleDef, ServiceError> {
    check_id(&id)?;
    check_text("title", &body.title, 200)?;
    check_text("explanation", &body.explanation, 4000)?;
    check_text("fix", &body.fix, 4000)?;
    check_text("link", &body.link, 2000)?;
    if !(body.link.starts_with("https://") || body.link.starts_with("http://")) {
        return Err(invalid("link must be an http or https URL"));
    }
    if body.service_thresholds.len() > MAX_SERVICE_THRESHOLDS {
        return Err(invalid(format!(
            "at most {MAX_SERVICE_THRESHOLDS} service thresholds"
        )));
    }
    for service in body.service_thresholds.keys() {
        validate_name("service", service)?;
    }
    let rule = RuleDef {
        id,
        title: body.title,
        explanation: body.explanation,
        fix: body.fix,
        link: body.link,
        kind: body.kind,
        spec: body.spec,
        threshold_pct: body.threshold_pct,
        service_thresholds: body.service_thresholds,
        enabled: body.enabled,
    };
    odp_rules::validate(&rule).map_err(|e| invalid(e.to_string()))?;
    Ok(rule)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn body(value: serde_json::Value) -> RuleBody {
        serde_json::from_value(value).unwrap()
    }

    fn stack_share(id: Option<&str>) -> serde_json::Value {
        json!({"id": id, "title": "Slow regex", "explanation": "Backtracking.",
               "fix": "Anchor it.", "link": "https://example.com/re",
               "kind": "stack_share", "spec": {"function": "^re\\.match$"},
               "threshold_pct": 5.0})
    }

    #[test]
    fn bodies_become_rules_or_say_what_is_wrong() {
        let rule = new_rule(body(stack_share(Some("slow-re")))).unwrap();
        assert_eq!((rule.id.as_str(), rule.enabled), ("slow-re", true));
        let refused = |value, says: &str| {
            let Err(ServiceError::Invalid(message)) = new_rule(body(value)) else {
                panic!("{says}: accepted")
            };
            assert!(message.contains(says), "{message}");
        };
        refused(stack_share(None), "id is required");
        refused(stack_share(Some("Upper")), "lower-case");
        let mut no_link = stack_share(Some("r"));
        no_link["link"] = json!("ftp://x");
        refused(no_link, "http or https");
        let mut bad_spec = stack_share(Some("r"));
        bad_spec["spec"] = json!({"function": "("});
        refused(bad_spec, "function");
        let mut bad_kind = stack_share(Some("r"));
        bad_kind["kind"] = json!("telepathy");
        refused(bad_kind, "unknown kind");
    }

    #[test]
    fn a_replacement_keeps_its_id_and_a_patch_rechecks_the_whole_rule() {
        assert!(replacement("a".into(), body(stack_share(Some("b")))).is_err());
        let rule = replacement("a".into(), body(stack_share(None))).unwrap();
        let off = patched(
            rule.clone(),
            RulePatch {
                enabled: Some(false),
                ..RulePatch::default()
            },
        )
        .unwrap();
        assert_eq!((off.id.as_str(), off.enabled), ("a", false));
        assert_eq!(off.spec, rule.spec);
        let too_high = RulePatch {
            threshold_pct: Some(101.0),
            ..RulePatch::default()
        };
        assert!(patched(rule, too_high).is_err());
    }
}
