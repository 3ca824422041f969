package main

import (
	"strings"
	"testing"
)

// TestAttackAccountAdversaryNaN (reviewer cattack2, issue 15): `dpstream
// account --adversary linear` on a discrete Laplace charge of small scale
// (accepted by the mechanism flags) prints "against linear adversaries
// (KL, ...): NaN (unrestricted KL 1000)" and exits 0, and with --json it
// fails with "json: unsupported value: NaN" (exit 1). The capacity figure
// is NaN (accountant/capacity TestAttackFigureNaN). Also, against poly2 at
// α = 1.01 it prints a restricted figure 40× the unrestricted one
// (45.1 vs 1.11: ErrEst added in; TestAttackFigureAboveUnrestricted).
// Fixed (it failed before): the figure is computed without underflow and
// capped at the unrestricted one, and a figure that cannot be computed is
// an error (capacity.ErrNotComputable), never NaN.
func TestAttackAccountAdversaryNaN(t *testing.T) {
	code, stdout, stderr := runAccountCLI(t, "account", "--discrete-laplace", "0.001", "--adversary", "linear")
	if strings.Contains(stdout, "NaN") {
		t.Errorf("exit %d, the report prints NaN:\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runAccountCLI(t, "account", "--json", "--discrete-laplace", "0.001", "--adversary", "linear")
	if code != 0 && strings.Contains(stderr, "NaN") {
		t.Errorf("--json: exit %d: %s%s", code, stdout, stderr)
	}
}
