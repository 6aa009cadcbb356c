//! Whether a review's author may do what their object makes the operator do, asked of the
//! apiserver's own authorizer (a LocalSubjectAccessReview in the object's namespace: a
//! namespaced grant, so even a namespaced install asks), so that the operator's rights never
//! stand in for the author's.

use super::envelope::JobAuthor;
use k8s_openapi::api::authorization::v1::{LocalSubjectAccessReview, ResourceAttributes, SubjectAccessReviewSpec};
use kube::Client;
use kube::api::{Api, PostParams};

/// The review that asks whether `author` may create Jobs in their namespace. Creating Jobs
/// there is also, in Kubernetes' own model, what lets one run a pod as any ServiceAccount of
/// that namespace, so it covers the account a service names too.
pub(super) fn job_review(author: &JobAuthor) -> LocalSubjectAccessReview {
    let user = &author.user;
    LocalSubjectAccessReview {
        metadata: kube::api::ObjectMeta { namespace: Some(author.namespace.clone()), ..Default::default() },
        spec: SubjectAccessReviewSpec {
            user: user.username.clone(),
            uid: user.uid.clone(),
            groups: user.groups.clone(),
            extra: user.extra.clone(),
            resource_attributes: Some(ResourceAttributes {
                namespace: Some(author.namespace.clone()),
                verb: Some("create".into()),
                group: Some("batch".into()),
                resource: Some("jobs".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Whether this operator would run the service's Jobs at all: only in the namespaces it watches
/// (all, when it watches all). Elsewhere (another instance's namespaces, in a namespaced
/// install whose webhook still sees every namespace) it runs nothing, and may not even ask.
pub(super) fn concerns(watched: &[String], namespace: &str) -> bool {
    watched.is_empty() || watched.iter().any(|w| w == namespace)
}

/// Asks the apiserver whether `author` may create Jobs in their namespace.
pub(super) async fn may_create_jobs(client: &Client, author: &JobAuthor) -> Result<bool, kube::Error> {
    let api: Api<LocalSubjectAccessReview> = Api::namespaced(client.clone(), &author.namespace);
    let answered = api.create(&PostParams::default(), &job_review(author)).await?;
    Ok(answered.status.is_some_and(|s| s.allowed && s.denied != Some(true)))
}

/// Why a service from an author who may not create Jobs is refused.
pub(super) fn refusal(author: &JobAuthor) -> String {
    format!(
        "{} may not create Jobs in namespace {}: a NodeSetService runs its image there as a Job, so only \
         someone who may create Jobs there may write one",
        author.user.username.as_deref().unwrap_or("this user"),
        author.namespace
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::authentication::v1::UserInfo;

    #[test]
    fn only_the_watched_namespaces_are_this_operators_concern() {
        assert!(concerns(&[], "anywhere"));
        let watched = ["metal3".to_string(), "edge".to_string()];
        assert!(concerns(&watched, "edge"));
        assert!(!concerns(&watched, "team-b"));
    }

    #[test]
    fn the_review_asks_for_the_authors_identity_and_jobs_in_their_namespace() {
        let author = JobAuthor {
            user: UserInfo {
                username: Some("alice".into()),
                uid: Some("u-1".into()),
                groups: Some(vec!["team-a".into()]),
                extra: Some([("scopes".to_string(), vec!["x".to_string()])].into()),
            },
            namespace: "team-a".into(),
        };
        let spec = job_review(&author).spec;
        assert_eq!(spec.user.as_deref(), Some("alice"));
        assert_eq!(spec.uid.as_deref(), Some("u-1"));
        assert_eq!(spec.groups, Some(vec!["team-a".to_string()]));
        assert!(spec.extra.is_some_and(|e| e.contains_key("scopes")));
        let asked = spec.resource_attributes.expect("resource");
        assert_eq!(
            (asked.namespace.as_deref(), asked.verb.as_deref(), asked.group.as_deref(), asked.resource.as_deref()),
            (Some("team-a"), Some("create"), Some("batch"), Some("jobs"))
        );
        assert!(refusal(&author).contains("alice may not create Jobs in namespace team-a"));
    }
}
