package main

import (
	"testing"

	"github.com/dpstream/dpstream/schema"
)

// TestBudgetKL checks the budget table's capacity-bounded column: the
// linear figure with the unrestricted one beside it, the releases left out
// when there are any, and 0 (0) for a state written before the figures.
func TestBudgetKL(t *testing.T) {
	for _, tc := range []struct {
		s    schema.BudgetState
		want string
	}{
		{schema.BudgetState{KL: 0.5381, LinearKL: 0.3039}, "0.3039 (0.5381)"},
		{schema.BudgetState{KL: 1.5, LinearKL: 0.75, ReleasesWithoutKL: 3}, "0.75 (1.5), 3 releases without"},
		{schema.BudgetState{}, "0 (0)"},
	} {
		if got := budgetKL(tc.s); got != tc.want {
			t.Errorf("budgetKL(%+v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}
