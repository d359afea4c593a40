package olmv0

import (
	"context"
	"fmt"

	"github.com/csi-olm/csi-olm/catalog/predict"
)

// Judge asks OLM v0's resolver where a Subscription goes from each bundle of the catalog
// version Old, in Old and in New, beside the cluster's installed operators. Old and New name two
// versions of one Source the Simulator serves.
type Judge struct {
	Simulator *Simulator
	Old, New  string
}

// Wording names OLM v0 in reports.
func (Judge) Wording() predict.Wording {
	return predict.Wording{OLM: "OLM", Users: "Subscriptions", Head: "head"}
}

// Outcomes implements predict.Judge.
func (j Judge) Outcomes(ctx context.Context, pkg, channel, bundle string) (before, after predict.Outcome, ok bool, err error) {
	start := Start{CSV: bundle, Package: pkg, Channel: channel, Existing: j.Simulator.Existing()}
	b, err := j.Simulator.Outcome(ctx, j.Old, start)
	if err != nil {
		return before, after, false, fmt.Errorf("simulating %s in channel %s of the old catalog: %w", bundle, channel, err)
	}
	start.InstalledFrom = j.Old
	a, err := j.Simulator.Outcome(ctx, j.New, start)
	if err != nil {
		return before, after, false, fmt.Errorf("simulating %s in channel %s of the new catalog: %w", bundle, channel, err)
	}
	return outcome(b), outcome(a), true, nil
}

func outcome(p *Path) predict.Outcome {
	return predict.Outcome{Result: p.Result, End: p.End, EndVersion: p.EndVersion, Why: p.Why(), Head: p.Head}
}
