package kube

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Permission is one verb on one resource, in a namespace or, when Namespace is empty, in
// every namespace or cluster-wide.
type Permission struct {
	Verb, Group, Resource, Subresource, Namespace string
}

func (p Permission) String() string {
	resource := p.Resource
	if p.Subresource != "" {
		resource += "/" + p.Subresource
	}
	if p.Group != "" {
		resource += "." + p.Group
	}
	where := "in every namespace"
	if p.Namespace != "" {
		where = "in namespace " + p.Namespace
	}
	return fmt.Sprintf("%s %s %s", p.Verb, resource, where)
}

// CheckAccess asks the API server whether the caller holds every permission, so that a verb
// that changes several objects can refuse before its first change rather than fail halfway.
// The error names every missing permission.
func CheckAccess(ctx context.Context, client kubernetes.Interface, permissions []Permission) error {
	var missing []string
	for _, p := range permissions {
		review, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource, Namespace: p.Namespace,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("checking whether you may %s: %w", p, err)
		}
		if !review.Status.Allowed {
			missing = append(missing, "  - "+p.String())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("you lack %d permissions this migration needs, so nothing was changed:\n%s", len(missing), strings.Join(missing, "\n"))
	}
	return nil
}
