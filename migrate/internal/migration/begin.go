package migration

import (
	"context"
	"errors"
	"fmt"
	"io"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/olm"
)

// Migration is where a migration of one package stands on a cluster: new, with the package's
// Subscription, or recorded by an earlier run, with its journal.
type Migration struct {
	Client client.Client
	Kube   kubernetes.Interface
	// Journal is the record of an earlier run; nil for a new migration.
	Journal *Journal
	// Subscription is the package's Subscription, for a new migration.
	Subscription *operatorsv1alpha1.Subscription
	// Namespace is the Subscription's, where the journal lives.
	Namespace string

	verb, target string
}

// Begin connects to the cluster and finds the journal of an earlier run of verb on target,
// checking it against the verb's steps and decoding its facts into recorded, or else the one
// Subscription of pkg.
func Begin(ctx context.Context, config *rest.Config, verb, target, pkg string, steps []string, recorded Facts, progress io.Writer) (*Migration, error) {
	m, err := Resume(ctx, config, verb, target, steps, recorded, progress)
	if err != nil || m.Journal != nil {
		return m, err
	}
	if m.Subscription, err = olm.TheSubscriptionOf(ctx, m.Client, pkg); err != nil {
		return nil, err
	}
	m.Namespace = m.Subscription.Namespace
	return m, nil
}

// Resume connects to the cluster and finds the journal of an earlier run of verb on target,
// checking it against the verb's steps and decoding its facts into recorded; the Migration's
// Journal is nil when there is none.
func Resume(ctx context.Context, config *rest.Config, verb, target string, steps []string, recorded Facts, progress io.Writer) (*Migration, error) {
	c, err := NewClient(config)
	if err != nil {
		return nil, err
	}
	kubeClient, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	m := &Migration{Client: c, Kube: kubeClient, verb: verb, target: target}
	if err := kube.CheckAccess(ctx, kubeClient, []kube.Permission{
		{Verb: "list", Group: "operators.coreos.com", Resource: "subscriptions"},
		{Verb: "list", Resource: "configmaps"},
	}); err != nil {
		return nil, err
	}
	if m.Journal, err = Find(ctx, c, verb, target); err != nil {
		return nil, err
	}
	if m.Journal != nil {
		if err := m.Journal.trust(verb, target, steps, recorded); err != nil {
			return nil, err
		}
		m.Namespace = m.Journal.cm.Namespace
		fmt.Fprintf(progress, "resuming the migration recorded in ConfigMap %s\n", m.Journal.Ref())
	}
	return m, nil
}

// Describe fills a plan's step list from the steps to run.
func Describe(steps []Step) []string {
	descriptions := make([]string, len(steps))
	for i, s := range steps {
		descriptions[i] = s.Description
	}
	return descriptions
}

// DryRunNote ends a dry run. It goes with the progress, so that a plan printed as yaml or json
// is all of the standard output.
const DryRunNote = "dry run: nothing changed; run with --confirm to migrate"

// Carry records a new migration with its plan, then runs the steps its journal does not record
// as done. The journal it returns is nil when there is none left: none was written, or the run
// refused before changing anything and removed it.
func (m *Migration) Carry(ctx context.Context, plan any, steps []Step, progress io.Writer) (*Journal, error) {
	if m.Journal == nil {
		j, err := Create(ctx, m.Client, m.Namespace, m.verb, m.target, plan)
		if err != nil {
			return nil, err
		}
		m.Journal = j
	}
	err := m.Journal.Run(ctx, progress, steps)
	var stepErr *StepError
	if errors.As(err, &stepErr) && stepErr.Discarded {
		return nil, fmt.Errorf("%w; the journal %s is removed: run again to plan afresh", err, m.Journal.Ref())
	}
	return m.Journal, err
}
