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
	missing, err := Missing(ctx, client, nil, permissions)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		lines := make([]string, len(missing))
		for i, p := range missing {
			lines[i] = p.String()
		}
		return fmt.Errorf("you lack %d permissions this migration needs, so nothing was changed:\n  - %s", len(missing), strings.Join(lines, "\n  - "))
	}
	return nil
}

// ServiceAccount is a ServiceAccount as the API server authorizes it.
func ServiceAccount(namespace, name string) *authorizationv1.SubjectAccessReviewSpec {
	return &authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + namespace + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
}

// Missing returns the permissions, of those given, that subject lacks; a nil subject is the
// caller.
func Missing(ctx context.Context, client kubernetes.Interface, subject *authorizationv1.SubjectAccessReviewSpec, permissions []Permission) ([]Permission, error) {
	var missing []Permission
	for _, p := range permissions {
		attrs := &authorizationv1.ResourceAttributes{
			Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource, Namespace: p.Namespace,
		}
		var allowed bool
		if subject == nil {
			review, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs},
			}, metav1.CreateOptions{})
			if err != nil {
				return nil, fmt.Errorf("checking whether you may %s: %w", p, err)
			}
			allowed = review.Status.Allowed
		} else {
			spec := *subject
			spec.ResourceAttributes = attrs
			review, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
			if err != nil {
				return nil, fmt.Errorf("checking whether %s may %s: %w", subject.User, p, err)
			}
			allowed = review.Status.Allowed
		}
		if !allowed {
			missing = append(missing, p)
		}
	}
	return missing, nil
}
