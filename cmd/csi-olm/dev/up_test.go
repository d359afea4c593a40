//go:build linux

package dev

import (
	"maps"
	"testing"
)

// A tree of per-minor catalogs is served by its newest minor's catalog, the minor the dev
// cluster runs; a plain catalog directory as it is.
func TestNewestMinorsServesATreesNewestMinor(t *testing.T) {
	got, err := newestMinors(map[string]string{"certified-operators": "../../../catalog/certified", "plain": "../../../catalog/certified/v4.9"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"certified-operators": "../../../catalog/certified/v4.11", "plain": "../../../catalog/certified/v4.9"}
	if !maps.Equal(got, want) {
		t.Errorf("catalogs %v, want %v", got, want)
	}
}
