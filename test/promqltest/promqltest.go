// Package promqltest evaluates PromQL, with Prometheus's own engine, on the samples of one scrape:
// what an alert rule's expression gives the moment those samples are the newest.
package promqltest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// Eval parses a text-format exposition, stores every sample at one instant, and evaluates expr
// as an instant query at that instant.
func Eval(ctx context.Context, exposition, expr string) (promql.Vector, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(exposition))
	if err != nil {
		return nil, fmt.Errorf("parsing the exposition: %w", err)
	}
	at := time.Now()
	samples, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.TimeFromUnixNano(at.UnixNano())},
		slices.Collect(maps.Values(families))...)
	if err != nil {
		return nil, fmt.Errorf("reading the exposition's samples: %w", err)
	}
	series := make([]storage.Series, 0, len(samples))
	for _, s := range samples {
		b := labels.NewScratchBuilder(len(s.Metric))
		for name, value := range s.Metric {
			b.Add(string(name), string(value))
		}
		b.Sort()
		series = append(series, storage.NewListSeries(b.Labels(), []chunks.Sample{sample{t: int64(s.Timestamp), f: float64(s.Value)}}))
	}
	slices.SortFunc(series, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })

	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	defer engine.Close()
	query, err := engine.NewInstantQuery(ctx, scrape(series), nil, expr, at)
	if err != nil {
		return nil, fmt.Errorf("parsing %q: %w", expr, err)
	}
	defer query.Close()
	result := query.Exec(ctx)
	if result.Err != nil {
		return nil, fmt.Errorf("evaluating %q: %w", expr, result.Err)
	}
	vector, err := result.Vector()
	if err != nil {
		return nil, fmt.Errorf("%q gives a %s, not an instant vector", expr, result.Value.Type())
	}
	// Closing the query recycles its result.
	return slices.Clone(vector), nil
}

// scrape is the storage the engine reads: the series that match every matcher of a selector.
func scrape(series []storage.Series) storage.Queryable {
	return &storage.MockQueryable{MockQuerier: &storage.MockQuerier{
		SelectMockFunction: func(_ bool, _ *storage.SelectHints, matchers ...*labels.Matcher) storage.SeriesSet {
			var matched []storage.Series
			for _, s := range series {
				if !slices.ContainsFunc(matchers, func(m *labels.Matcher) bool { return !m.Matches(s.Labels().Get(m.Name)) }) {
					matched = append(matched, s)
				}
			}
			return &seriesSet{series: matched}
		},
	}}
}

// sample is one float sample; the chunks package exports no constructor for one.
type sample struct {
	t int64
	f float64
}

func (s sample) T() int64                      { return s.t }
func (s sample) ST() int64                     { return 0 }
func (s sample) F() float64                    { return s.f }
func (s sample) H() *histogram.Histogram       { return nil }
func (s sample) FH() *histogram.FloatHistogram { return nil }
func (s sample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s sample) Copy() chunks.Sample           { return s }

type seriesSet struct {
	series []storage.Series
	next   int
}

func (s *seriesSet) Next() bool                        { s.next++; return s.next <= len(s.series) }
func (s *seriesSet) At() storage.Series                { return s.series[s.next-1] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }
