// Package names is the home of the names that several csi-olm packages must spell the same way;
// its subpackages hold one driver's names each, and olm those of what OLM makes for a CSV. They
// are leaves: they import nothing of this module, so the operator, the bundle definitions, the
// migrate verbs and the test fixtures can all import them without pulling in each other. Names here are load-bearing: adoption and
// upgrades match objects by them (docs/architecture.md#names-that-must-match).
package names
