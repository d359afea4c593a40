package promqltest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/csi-olm/csi-olm/test/promqltest"
)

func TestEval(t *testing.T) {
	const expr = `max(aws_efs_csi_driver_operator_clustercsidriver_present) == 0`
	page := func(value string) string {
		return "# HELP aws_efs_csi_driver_operator_clustercsidriver_present Whether the CR exists.\n" +
			"# TYPE aws_efs_csi_driver_operator_clustercsidriver_present gauge\n" +
			"aws_efs_csi_driver_operator_clustercsidriver_present " + value + "\n" +
			"# TYPE other gauge\nother{a=\"b\"} 0\n"
	}
	for _, tc := range []struct {
		name, exposition, expr string
		series                 int
		err                    string
	}{
		{name: "gauge 0 fires", exposition: page("0"), expr: expr, series: 1},
		{name: "gauge 1 does not", exposition: page("1"), expr: expr, series: 0},
		{name: "metric absent does not", exposition: "# TYPE other gauge\nother 0\n", expr: expr, series: 0},
		{name: "label matchers select", exposition: page("1"), expr: `other{a="b"} == 0`, series: 1},
		{name: "bad exposition", exposition: "not a metric line {\n", expr: expr, err: "parsing the exposition"},
		{name: "bad expression", exposition: page("0"), expr: "max(", err: "parsing \"max(\""},
		{name: "a scalar is no vector", exposition: page("0"), expr: "1", err: "not an instant vector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := promqltest.Eval(context.Background(), tc.exposition, tc.expr)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(v) != tc.series {
				t.Errorf("%s gives %d series (%v), want %d", tc.expr, len(v), v, tc.series)
			}
		})
	}
}
