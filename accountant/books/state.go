package books

import (
	"fmt"
	"sort"

	"github.com/dpstream/dpstream/accountant"
)

// AccountState is an accountant.Account as a checkpoint keeps it: its
// curve nil when it is the zero curve, else accountant.NumOrders entries.
type AccountState struct {
	Curve         []float64
	Pure          float64
	AllPure       bool
	ApproxEpsilon float64
	ApproxDelta   float64
	Charges       int64
	Refused       int64
}

// PeriodState is one period's books as a checkpoint keeps them: its
// account, its answers' account (nil when no answer was charged to it),
// and its composed figures.
type PeriodState struct {
	Period       int64
	Account      AccountState
	Queries      *AccountState
	KL, LinearKL float64
	WithoutKL    int64
}

// Export returns the books of the stream's kept periods (the last kept,
// counting back from its latest: see New), oldest first; nil for a stream
// without books. Books that Import them back decide and report every
// later charge of those periods as these do.
func (b *Books) Export(stream string) []PeriodState {
	latest, ok := b.latest[stream]
	if !ok {
		return nil
	}
	var out []PeriodState
	for k, p := range b.periods {
		if k.Stream != stream || k.Period <= latest-b.kept {
			continue
		}
		ps := PeriodState{Period: k.Period, Account: exportAccount(&p.account),
			KL: p.kl.kl, LinearKL: p.kl.linear, WithoutKL: p.kl.without}
		if p.hasQueries {
			q := exportAccount(&p.queries)
			ps.Queries = &q
		}
		out = append(out, ps)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Period < out[j].Period })
	return out
}

// Import sets the books of the stream's periods in ps (as Export returned
// them), replacing any open books of those periods. It refuses, changing
// nothing, a state whose account is malformed: a curve that is not one of
// the accountant's orders, a sum that is not a non-negative number, a
// negative count. The budget is never rebuilt from books it cannot read
// exactly: a corrupt account would misstate it.
func (b *Books) Import(stream string, ps []PeriodState) error {
	periods := make([]period, len(ps))
	for i, s := range ps {
		a, err := importAccount(s.Account)
		if err != nil {
			return fmt.Errorf("stream %s period %d: %w", stream, s.Period, err)
		}
		periods[i] = period{account: a, kl: sums{kl: s.KL, linear: s.LinearKL, without: s.WithoutKL}}
		if s.Queries != nil {
			q, err := importAccount(*s.Queries)
			if err != nil {
				return fmt.Errorf("stream %s period %d, query account: %w", stream, s.Period, err)
			}
			periods[i].queries, periods[i].hasQueries = q, true
		}
	}
	for i, s := range ps {
		*b.open(Key{stream, s.Period}) = periods[i]
	}
	return nil
}

func exportAccount(a *accountant.Account) AccountState {
	var curve []float64 // nil for the zero curve
	for _, v := range a.Curve {
		if v != 0 {
			curve = append([]float64(nil), a.Curve[:]...)
			break
		}
	}
	return AccountState{Curve: curve, Pure: a.Pure, AllPure: a.AllPure,
		ApproxEpsilon: a.ApproxEpsilon, ApproxDelta: a.ApproxDelta, Charges: int64(a.Charges), Refused: int64(a.Refused)}
}

// importAccount rebuilds an account, refusing one whose curve is not a
// well-formed curve of the accountant's orders or whose sums are not
// non-negative numbers.
func importAccount(s AccountState) (accountant.Account, error) {
	a := accountant.Account{Pure: s.Pure, AllPure: s.AllPure, ApproxEpsilon: s.ApproxEpsilon, ApproxDelta: s.ApproxDelta,
		Charges: int(s.Charges), Refused: int(s.Refused)}
	if len(s.Curve) > 0 {
		if len(s.Curve) != accountant.NumOrders {
			return a, fmt.Errorf("account curve of %d orders, want %d", len(s.Curve), accountant.NumOrders)
		}
		copy(a.Curve[:], s.Curve)
	}
	for _, v := range append([]float64{s.Pure, s.ApproxEpsilon, s.ApproxDelta}, s.Curve...) {
		if !(v >= 0) {
			return a, fmt.Errorf("account holds %v where a non-negative number belongs", v)
		}
	}
	if s.Charges < 0 || s.Refused < 0 {
		return a, fmt.Errorf("account counts %d charges and %d refusals", s.Charges, s.Refused)
	}
	return a, nil
}
