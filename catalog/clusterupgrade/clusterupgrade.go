// Package clusterupgrade is the `csi-olm catalog cluster-upgrade` verb: what becomes of each
// installed operator when an OpenShift cluster moves to the next minor and its catalogs become
// that minor's.
//
// A cluster at 4.N reads the catalogs of 4.N's index. Every bundle of them some release of 4.N
// can run (its minKubeVersion within the Kubernetes of one of 4.N's z-streams, its
// olm.maxOpenShiftVersion not below 4.N) may be
// installed there, by a Subscription to each channel that holds it. When the cluster upgrades,
// one of three things happens to it:
//   - OLM keeps the cluster at 4.N: the bundle's olm.maxOpenShiftVersion is below 4.N+1, and
//     OLM reports the cluster not upgradeable until the operator is upgraded;
//   - the Subscription now reads 4.N+1's catalog, and OLM takes the bundle where its resolver
//     says (catalog/simulate asks OLM's own resolver, the catalog of 4.N hidden as a cluster
//     that serves 4.N+1's no longer has it);
//   - or OLM cannot move it: its package or channel is gone, nothing in 4.N+1's catalog
//     replaces, skips or has a skipRange holding it, or the upgrade does not resolve. The
//     installed operator is stranded.
package clusterupgrade

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/catalog/predict/olmv0"
	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/internal/openshift"
)

// Outcome is what becomes of an installed bundle.
type Outcome string

const (
	// Moves: OLM takes the bundle to End in the next minor's catalog.
	Moves Outcome = "moves"
	// Stays: the bundle is the channel head of the next minor's catalog too.
	Stays Outcome = "stays"
	// Stranded: OLM cannot move the bundle, which stays installed with no upgrade.
	Stranded Outcome = "stranded"
	// Unresolvable: OLM's resolver fails on the Subscription (ResolutionFailed).
	Unresolvable Outcome = "unresolvable"
	// Blocks: the bundle's olm.maxOpenShiftVersion keeps the cluster at its minor.
	Blocks Outcome = "blocks"
	// Loops: the next minor's edges lead OLM round a circle of upgrades for good.
	Loops Outcome = "loops"
)

// Bad says whether an outcome leaves the installed operator, or the cluster, stuck.
func (o Outcome) Bad() bool { return o == Stranded || o == Unresolvable || o == Blocks || o == Loops }

// Finding is the outcome of one installed bundle, subscribed to one channel.
type Finding struct {
	Package string  `json:"package"`
	Channel string  `json:"channel"`
	Bundle  string  `json:"bundle"`
	Outcome Outcome `json:"outcome"`
	// End is where OLM leaves the bundle in the next minor's catalog, when it moves or stays.
	End string `json:"end,omitempty"`
	// Message says why, in OLM's or OpenShift's words when it is theirs.
	Message string `json:"message,omitempty"`
}

func (f Finding) key() string { return f.Package + "\x00" + f.Channel + "\x00" + f.Bundle }

// Step is one cluster upgrade, from a minor to the next, and what it does to each installed
// bundle of the first minor's catalog.
type Step struct {
	From     string    `json:"from"`
	To       string    `json:"to"`
	Findings []Finding `json:"findings"`
	// NotInstallable counts the bundles of From's catalog no release of From can run; they
	// are not followed (`catalog validate` names them).
	NotInstallable int `json:"notInstallable,omitempty"`
}

// Report is every cluster upgrade a tree of per-minor catalogs offers, oldest first.
type Report struct {
	Tree  string `json:"tree"`
	Steps []Step `json:"steps"`
	// Unchecked are the tree's minors whose next minor the tree lacks: their upgrades cannot be
	// followed.
	Unchecked []string `json:"unchecked,omitempty"`
}

// Bad lists the bad findings of every step, each with its step.
func (r *Report) Bad() []StepFinding {
	var out []StepFinding
	for _, s := range r.Steps {
		for _, f := range s.Findings {
			if f.Outcome.Bad() {
				out = append(out, StepFinding{From: s.From, To: s.To, Finding: f})
			}
		}
	}
	return out
}

// StepFinding is a finding with the upgrade it is about.
type StepFinding struct {
	From, To string
	Finding
}

// Check follows every installed bundle of every minor of the tree at dir through the cluster's
// upgrade to the next minor.
func Check(ctx context.Context, dir string) (*Report, error) {
	t, err := tree.Open(dir)
	if err != nil {
		return nil, err
	}
	report := &Report{Tree: dir}
	// Every minor is a version of one CatalogSource: a resolution against one minor sees none of
	// the others, as a cluster serves only its own minor's.
	var minors olmv0.Source
	for _, m := range t.Minors {
		l, err := load.Open(ctx, t.Path(m))
		if err != nil {
			return nil, err
		}
		defer l.Close()
		o := predict.Loaded(l)
		o.Name = m.Index()
		minors = append(minors, o)
	}
	catalogs, err := olmv0.Load(ctx, nil, minors)
	if err != nil {
		return nil, err
	}
	sim, err := catalogs.Serve(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer sim.Close()
	for _, m := range t.Minors {
		next := m.Next()
		if !t.Has(next) {
			report.Unchecked = append(report.Unchecked, m.Index())
			continue
		}
		step, err := follow(ctx, sim, m, next)
		if err != nil {
			return nil, fmt.Errorf("following %s to %s: %w", m.Index(), next.Index(), err)
		}
		report.Steps = append(report.Steps, *step)
	}
	return report, nil
}

// follow finds the outcome of every bundle a cluster at from can run, when it moves to to.
func follow(ctx context.Context, sim *olmv0.Simulator, from, to openshift.Minor) (*Step, error) {
	step := &Step{From: from.Index(), To: to.Index()}
	idx := sim.Index(from.Index())
	var starts []olmv0.Start
	blocked := map[string]string{}
	for _, st := range sim.Starts(from.Index()) {
		b := idx.Package(st.Package).Bundles[st.CSV]
		if b == nil {
			continue // a channel entry without a bundle; validation reports it
		}
		l := index.Limits(b.Decl)
		switch {
		case !l.RunsAt(from):
			step.NotInstallable++
			continue
		case l.Err != nil:
			blocked[st.CSV] = fmt.Sprintf("OLM reports the cluster not upgradeable (IncompatibleOperatorsInstalled): <namespace>/%s has invalid %s properties: %v", st.CSV, openshift.MaxVersionProperty, l.Err)
		case l.Max != nil && openshift.BlocksUpgrade(from, *l.Max):
			blocked[st.CSV] = fmt.Sprintf("OLM reports the cluster not upgradeable to %s (IncompatibleOperatorsInstalled): maximum supported OCP version for <namespace>/%s is %s", to, st.CSV, l.Max)
		}
		st.InstalledFrom, st.Running = from.Index(), true
		starts = append(starts, st)
	}
	step.Findings = make([]Finding, len(starts))
	// The simulator is safe for concurrent use, and each start's resolutions are OLM's
	// resolver's CPU: one worker per core.
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []error
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				st := starts[i]
				f := Finding{Package: st.Package, Channel: st.Channel, Bundle: st.CSV}
				if msg, ok := blocked[st.CSV]; ok {
					f.Outcome, f.Message = Blocks, msg
				} else if err := outcome(ctx, sim, to, st, &f); err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
				}
				step.Findings[i] = f
			}
		}()
	}
	for i := range starts {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(failures...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return step, nil
}

// outcome asks OLM's resolver where a Subscription of the next minor's catalog takes the bundle.
func outcome(ctx context.Context, sim *olmv0.Simulator, to openshift.Minor, st olmv0.Start, f *Finding) error {
	p, err := sim.Outcome(ctx, to.Index(), st)
	var se *predict.StartError
	if errors.As(err, &se) {
		f.Outcome = Stranded
		switch se.Kind {
		case predict.NoPackage:
			f.Message = fmt.Sprintf("package %s is not in the %s catalog: OLM has nothing to upgrade it to", st.Package, to.Index())
		case predict.NoChannel:
			f.Message = fmt.Sprintf("channel %s is not in the %s catalog (channels: %s): the Subscription no longer resolves until it names one of them",
				st.Channel, to.Index(), strings.Join(se.Choices, ", "))
		default:
			return err
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s in channel %s: %w", st.CSV, st.Channel, err)
	}
	f.End = p.End
	switch {
	case p.Result == predict.Unresolvable:
		f.Outcome, f.Message = Unresolvable, p.Why()
	case p.Result == predict.Loops:
		f.Outcome, f.Message = Loops, p.Why()
	case p.Result == predict.Stranded && p.End == st.CSV:
		f.Outcome, f.Message = Stranded, p.Why()
	case p.Result == predict.Stranded:
		f.Outcome, f.Message = Moves, "short of the head: "+p.Why()
	case p.End == st.CSV:
		f.Outcome = Stays
	default:
		f.Outcome = Moves
	}
	return nil
}

// Regressions compares the report with one of an earlier tree: the bad findings of r that were
// not bad there (or did not exist), and those that were bad already.
func (r *Report) Regressions(earlier *Report) (regressions, already []StepFinding) {
	before := map[string]bool{}
	for _, f := range earlier.Bad() {
		before[f.From+"\x00"+f.To+"\x00"+f.key()] = true
	}
	for _, f := range r.Bad() {
		if before[f.From+"\x00"+f.To+"\x00"+f.key()] {
			already = append(already, f)
		} else {
			regressions = append(regressions, f)
		}
	}
	return regressions, already
}

// Text renders the report for people: per cluster upgrade, the installs of each package and
// channel grouped by what becomes of them, the bad ones marked with !.
func Text(r *Report) string {
	type group struct {
		pkg, channel, end, message string
		outcome                    Outcome
	}
	var b strings.Builder
	for _, s := range r.Steps {
		counts := map[Outcome]int{}
		for _, f := range s.Findings {
			counts[f.Outcome]++
		}
		fmt.Fprintf(&b, "%s -> %s: %d installs followed: %d move on, %d stay, %d stranded, %d unresolvable, %d block the upgrade",
			s.From, s.To, len(s.Findings), counts[Moves], counts[Stays], counts[Stranded], counts[Unresolvable], counts[Blocks])
		if counts[Loops] > 0 {
			fmt.Fprintf(&b, ", %d loop", counts[Loops])
		}
		if s.NotInstallable > 0 {
			fmt.Fprintf(&b, " (%d bundles no release of %s can run, not followed)", s.NotInstallable, s.From)
		}
		b.WriteString("\n")
		bundles := map[group][]string{}
		var order []group
		for _, f := range s.Findings {
			g := group{f.Package, f.Channel, f.End, f.Message, f.Outcome}
			if _, ok := bundles[g]; !ok {
				order = append(order, g)
			}
			bundles[g] = append(bundles[g], f.Bundle)
		}
		for _, g := range order {
			names := strings.Join(bundles[g], ", ")
			if g.outcome.Bad() {
				fmt.Fprintf(&b, "  ! package %s, channel %s: %s %s: %s\n", g.pkg, g.channel, names, g.outcome, g.message)
				continue
			}
			if g.outcome == Stays {
				fmt.Fprintf(&b, "  package %s, channel %s: %s stays at the channel head\n", g.pkg, g.channel, names)
				continue
			}
			fmt.Fprintf(&b, "  package %s, channel %s: %s -> %s", g.pkg, g.channel, names, g.end)
			if g.message != "" {
				fmt.Fprintf(&b, " (%s)", g.message)
			}
			b.WriteString("\n")
		}
	}
	for _, m := range r.Unchecked {
		fmt.Fprintf(&b, "%s -> the next minor: the tree has no catalog for it, not followed\n", m)
	}
	return b.String()
}

// summary counts the bad findings by outcome, for errors.
func summary(bad []StepFinding) string {
	counts := map[Outcome]int{}
	for _, f := range bad {
		counts[f.Outcome]++
	}
	var parts []string
	for _, o := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
	}
	return strings.Join(parts, ", ")
}
