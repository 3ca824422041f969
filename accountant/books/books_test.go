package books

import (
	"go/parser"
	"go/token"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/accountant/capacity"
)

// The mechanisms the tests charge: with figures (discrete Laplace and
// Gaussian, Laplace, Gaussian) and without (exponential, zCDP, pure,
// approx_dp), as the release stage's kinds charge them.
var (
	dlap  = accountant.Mechanism{Kind: accountant.KindDiscreteLaplace, Scale: 4, Sensitivity: 1}
	dgau  = accountant.Mechanism{Kind: accountant.KindDiscreteGaussian, Scale: 6, Sensitivity: 2}
	lap   = accountant.Mechanism{Kind: accountant.KindLaplace, Scale: 2, Sensitivity: 1}
	gau   = accountant.Mechanism{Kind: accountant.KindGaussian, Scale: 5, Sensitivity: 1}
	expo  = accountant.Mechanism{Kind: accountant.KindExponential, Epsilon: 0.2}
	zcdp  = accountant.Mechanism{Kind: accountant.KindZCDP, Epsilon: 0.01}
	pure  = accountant.Mechanism{Kind: accountant.KindPure, Epsilon: 0.3}
	appr  = accountant.Mechanism{Kind: accountant.KindApproxDP, Epsilon: 0.1, Delta: 1e-8}
	tests = [][]accountant.Mechanism{
		{dlap}, {dlap, dgau}, {lap}, {gau, lap}, {expo}, {zcdp}, {pure}, {pure, pure}, {appr, dlap}, {dgau, expo},
	}
)

// reference is the release stage's bookkeeping before this package, kept
// verbatim in its logic (stages/release: Releaser.accounts, queryAccounts,
// kl, klCache; ReleaseWindow's Try and addKL, Answer, Restore and
// restoreModel, State, EncodeState, MarkCheckpoint), to check that Books
// keeps the same books.
type reference struct {
	accounts, queryAccounts map[Key]*accountant.Account
	kl                      map[Key]*refSum
	klCache                 map[accountant.Mechanism]figure
}

type refSum struct {
	kl, linear float64
	without    int64
}

func newReference() *reference {
	return &reference{accounts: map[Key]*accountant.Account{}, queryAccounts: map[Key]*accountant.Account{},
		kl: map[Key]*refSum{}, klCache: map[accountant.Mechanism]figure{}}
}

func (r *reference) account(k Key) *accountant.Account {
	a := r.accounts[k]
	if a == nil {
		a = &accountant.Account{AllPure: true}
		r.accounts[k] = a
	}
	return a
}

func (r *reference) queryAccount(k Key) *accountant.Account {
	a := r.queryAccounts[k]
	if a == nil {
		a = &accountant.Account{AllPure: true}
		r.queryAccounts[k] = a
	}
	return a
}

func (r *reference) klFigures(ms []accountant.Mechanism) (p capacity.Pair, ok bool) {
	for _, m := range ms {
		e, hit := r.klCache[m]
		if !hit {
			f, err := capacity.Figures(m, capacity.Linear, capacity.KL())
			e = figure{p: f, ok: err == nil}
			r.klCache[m] = e
		}
		if !e.ok {
			return capacity.Pair{}, false
		}
		p.Restricted = capacity.ComposeNonAdaptive(p.Restricted, e.p.Restricted)
		p.Unrestricted += e.p.Unrestricted
	}
	return p, true
}

func (r *reference) addKL(k Key, ms []accountant.Mechanism) {
	s := r.kl[k]
	if s == nil {
		s = &refSum{}
		r.kl[k] = s
	}
	p, ok := r.klFigures(ms)
	if !ok {
		s.without++
		return
	}
	s.kl += p.Unrestricted
	s.linear = capacity.ComposeNonAdaptive(s.linear, p.Restricted)
}

func (r *reference) charge(k Key, b accountant.Budget, ms []accountant.Mechanism) (bool, error) {
	acct := r.account(k)
	ok, err := acct.Try(b, ms)
	if err == nil && ok {
		r.addKL(k, ms)
	}
	return ok, err
}

// answer is Releaser.Answer's accounting; queryRefused says which budget
// refused.
func (r *reference) answer(k Key, b accountant.Budget, share float64, ms []accountant.Mechanism) (ok, queryRefused bool, err error) {
	acct := r.account(k)
	saved := *acct
	ok, err = acct.Try(b, ms)
	if err != nil {
		return false, false, err
	}
	if !ok {
		*acct = saved
		return false, false, nil
	}
	if share > 0 {
		qa := r.queryAccount(k)
		qsaved := *qa
		ok, err := qa.Try(accountant.Budget{Epsilon: share, Delta: b.Delta}, ms)
		if err != nil {
			return false, false, err
		}
		if !ok {
			*acct, *qa = saved, qsaved
			return false, true, nil
		}
	} else if err := r.queryAccount(k).Apply(ms); err != nil {
		*acct = saved
		return false, false, err
	}
	r.addKL(k, ms)
	return true, false, nil
}

// apply is Restore's (with restoreModel's query account) for an ok charge.
func (r *reference) apply(k Key, ms []accountant.Mechanism, answer bool) error {
	if answer {
		if err := r.queryAccount(k).Apply(ms); err != nil {
			return err
		}
	}
	if err := r.account(k).Apply(ms); err != nil {
		return err
	}
	r.addKL(k, ms)
	return nil
}

func (r *reference) latest(stream string) (p int64, ok bool) {
	for k := range r.accounts {
		if k.Stream == stream && (!ok || k.Period > p) {
			p, ok = k.Period, true
		}
	}
	return p, ok
}

func (r *reference) summary(k Key, delta float64) Summary {
	a := r.account(k)
	s := Summary{Charges: int64(a.Charges), Refused: int64(a.Refused), Spent: a.Spent(delta), Pure: a.Pure, AllPure: a.AllPure}
	if ks := r.kl[k]; ks != nil {
		s.KL, s.LinearKL, s.WithoutKL = ks.kl, ks.linear, ks.without
	}
	return s
}

// export is EncodeState's, except that a query account left empty and
// fresh by a refusal of the query share is not kept: Books rolls its
// opening back with the refused charge (rebuilt books never open it).
func (r *reference) export(stream string, kept int64) []PeriodState {
	latest, have := r.latest(stream)
	var out []PeriodState
	for k, a := range r.accounts {
		if k.Stream != stream || !have || k.Period <= latest-kept {
			continue
		}
		ps := PeriodState{Period: k.Period, Account: exportAccount(a)}
		if q := r.queryAccounts[k]; q != nil && *q != (accountant.Account{AllPure: true}) {
			qs := exportAccount(q)
			ps.Queries = &qs
		}
		if s := r.kl[k]; s != nil {
			ps.KL, ps.LinearKL, ps.WithoutKL = s.kl, s.linear, s.without
		}
		out = append(out, ps)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Period < out[j].Period })
	return out
}

func (r *reference) drop(kept int64) {
	for k := range r.accounts {
		if latest, ok := r.latest(k.Stream); ok && k.Period <= latest-kept {
			delete(r.accounts, k)
			delete(r.queryAccounts, k)
			delete(r.kl, k)
		}
	}
}

// TestMatchesReference drives random sequences of charges, answers,
// restores, refusals and checkpoints through Books and the reference, and
// checks after every step that the decisions, receipts, summaries and
// exported books are identical.
func TestMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		name  string
		seed  uint64
		bud   accountant.Budget
		share float64
		steps int
	}{
		{"roomy budget, no share", 1, accountant.Budget{Epsilon: 50, Delta: 1e-6}, 0, 400},
		{"tight budget, share", 2, accountant.Budget{Epsilon: 3, Delta: 1e-6}, 1, 400},
		{"tiny share", 3, accountant.Budget{Epsilon: 10, Delta: 1e-5}, 0.25, 400},
		{"pure budget", 4, accountant.Budget{Epsilon: 2, Delta: 0}, 0.5, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const kept = 2
			rng := rand.New(rand.NewPCG(tc.seed, 99))
			b, ref := New(kept), newReference()
			streams := []string{"a", "b"}
			periods := map[string]int64{}
			for step := 0; step < tc.steps; step++ {
				s := streams[rng.IntN(len(streams))]
				if rng.IntN(20) == 0 {
					periods[s]++ // the stream moves on to its next period
				}
				// Mostly the latest period, sometimes the one before
				// (an answer from the previous window's models).
				k := Key{s, periods[s] - int64(rng.IntN(2))}
				ms := tests[rng.IntN(len(tests))]
				switch op := rng.IntN(10); {
				case op < 4:
					rc, err := b.Charge(k, tc.bud, ms)
					ok, rerr := ref.charge(k, tc.bud, ms)
					if (err != nil) != (rerr != nil) || rc.Allowed != ok {
						t.Fatalf("step %d: Charge = %v, %v; reference %v, %v", step, rc.Allowed, err, ok, rerr)
					}
					checkReceipt(t, step, rc, ref, k, tc.bud.Delta, ms)
				case op < 7:
					rc, err := b.ChargeAnswer(k, tc.bud, tc.share, ms)
					ok, qr, rerr := ref.answer(k, tc.bud, tc.share, ms)
					if (err != nil) != (rerr != nil) || rc.Allowed != ok || rc.QueryRefused != qr {
						t.Fatalf("step %d: ChargeAnswer = %+v, %v; reference %v, %v, %v", step, rc.Allowed, err, ok, qr, rerr)
					}
					checkReceipt(t, step, rc, ref, k, tc.bud.Delta, ms)
				case op == 7:
					answer := rng.IntN(2) == 0
					rc, err := b.Apply(k, ms, answer)
					rerr := ref.apply(k, ms, answer)
					if (err != nil) != (rerr != nil) || !rc.Allowed {
						t.Fatalf("step %d: Apply = %+v, %v; reference %v", step, rc.Allowed, err, rerr)
					}
					rc.Spent = ref.account(k).Spent(tc.bud.Delta) // Apply has no δ
					checkReceipt(t, step, rc, ref, k, tc.bud.Delta, ms)
				case op == 8:
					b.Refuse(k)
					ref.account(k).Refused++
				default:
					b.Drop()
					ref.drop(kept)
				}
				if got, want := b.Spent(k, tc.bud.Delta), ref.account(k).Spent(tc.bud.Delta); got != want {
					t.Fatalf("step %d: Spent = %v, reference %v", step, got, want)
				}
				for _, s := range streams {
					if got, want := b.Summary(Key{s, periods[s]}, tc.bud.Delta), ref.summary(Key{s, periods[s]}, tc.bud.Delta); got != want {
						t.Fatalf("step %d: Summary(%s) = %+v, reference %+v", step, s, got, want)
					}
					if got, want := b.Export(s), ref.export(s, kept); !reflect.DeepEqual(got, want) {
						t.Fatalf("step %d: Export(%s) = %+v\nreference %+v", step, s, got, want)
					}
					gl, gok := b.Latest(s)
					wl, wok := ref.latest(s)
					if gl != wl || gok != wok {
						t.Fatalf("step %d: Latest(%s) = %d, %v; reference %d, %v", step, s, gl, gok, wl, wok)
					}
				}
			}
		})
	}
}

// checkReceipt checks a receipt against the reference's account after the
// same charge, and its figures against the reference's for the charge.
func checkReceipt(t *testing.T, step int, rc Receipt, ref *reference, k Key, delta float64, ms []accountant.Mechanism) {
	t.Helper()
	a := ref.account(k)
	if rc.Curve != a.Curve || rc.Spent != a.Spent(delta) {
		t.Fatalf("step %d: receipt curve or spent (%v) is not the account's after the charge (%v)", step, rc.Spent, a.Spent(delta))
	}
	if !rc.Allowed {
		if rc.HasKL || rc.KL != 0 || rc.LinearKL != 0 {
			t.Fatalf("step %d: a charge not allowed has figures: %+v", step, rc)
		}
		return
	}
	p, ok := ref.klFigures(ms)
	if rc.HasKL != ok || rc.KL != p.Unrestricted || rc.LinearKL != p.Restricted {
		t.Fatalf("step %d: receipt figures %v %v %v, reference %v %v %v", step, rc.KL, rc.LinearKL, rc.HasKL, p.Unrestricted, p.Restricted, ok)
	}
}

// TestChargeIsTry: a charge's decision and receipt are accountant.Account's
// Try on an account fed the same charges, and an error changes nothing.
func TestChargeIsTry(t *testing.T) {
	bud := accountant.Budget{Epsilon: 2, Delta: 1e-6}
	b := New(2)
	k := Key{"s", 7}
	a := accountant.Account{AllPure: true}
	for i := 0; i < 40; i++ {
		ms := tests[i%len(tests)]
		rc, err := b.Charge(k, bud, ms)
		ok, werr := a.Try(bud, ms)
		if err != nil || werr != nil || rc.Allowed != ok || rc.Curve != a.Curve || rc.Spent != a.Spent(bud.Delta) {
			t.Fatalf("charge %d: %v %v, Try %v %v", i, rc.Allowed, err, ok, werr)
		}
	}
	before := b.Export("s")
	for _, tc := range []struct {
		name string
		bud  accountant.Budget
		ms   []accountant.Mechanism
	}{
		{"invalid budget", accountant.Budget{Epsilon: -1}, tests[0]},
		{"no mechanisms", bud, nil},
		{"invalid mechanism", bud, []accountant.Mechanism{{Kind: "nope"}}},
	} {
		if _, err := b.Charge(k, tc.bud, tc.ms); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
		if _, err := b.ChargeAnswer(k, tc.bud, 1, tc.ms); err == nil {
			t.Errorf("%s: ChargeAnswer: no error", tc.name)
		}
		if tc.bud == bud {
			if _, err := b.Apply(k, tc.ms, true); err == nil {
				t.Errorf("%s: Apply: no error", tc.name)
			}
		}
		if got := b.Export("s"); !reflect.DeepEqual(got, before) {
			t.Errorf("%s: the error changed the books", tc.name)
		}
	}
}

// TestChargeAnswerBothOrNeither: an answer is charged to the stream's
// account and its answers' account together or to neither, and a refused
// one is not counted as a refusal.
func TestChargeAnswerBothOrNeither(t *testing.T) {
	ms := []accountant.Mechanism{dlap} // ε = 0.25
	for _, tc := range []struct {
		name         string
		budget       float64 // the stream's ε
		share        float64
		pre          int // answers charged before
		allowed      bool
		queryRefused bool
	}{
		{"both hold it", 10, 1, 0, true, false},
		{"no share: applied to the answers' account", 10, 0, 3, true, false},
		{"the share refuses", 10, 0.6, 2, false, true},
		{"the share refuses the first", 10, 0.1, 0, false, true},
		{"the stream's budget refuses", 0.6, 10, 2, false, false},
		{"the stream's budget refuses, no share", 0.6, 0, 2, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bud := accountant.Budget{Epsilon: tc.budget, Delta: 1e-6}
			b, k := New(2), Key{"s", 0}
			b.Open(k) // every call opens the period: a refusal too
			for i := 0; i < tc.pre; i++ {
				if rc, err := b.ChargeAnswer(k, bud, tc.share, ms); err != nil || !rc.Allowed {
					t.Fatalf("answer %d: %+v, %v", i, rc.Allowed, err)
				}
			}
			before := b.Export("s")
			rc, err := b.ChargeAnswer(k, bud, tc.share, ms)
			if err != nil || rc.Allowed != tc.allowed || rc.QueryRefused != tc.queryRefused {
				t.Fatalf("ChargeAnswer = %+v, %v; want allowed %v, query refused %v", rc, err, tc.allowed, tc.queryRefused)
			}
			after := b.Export("s")
			if !tc.allowed {
				if !reflect.DeepEqual(after, before) {
					t.Fatalf("a refused answer changed the books:\n%+v\n%+v", before, after)
				}
				return
			}
			var wantQ accountant.Account
			for i := 0; i <= tc.pre; i++ {
				if err := wantQ.Apply(ms); err != nil {
					t.Fatal(err)
				}
			}
			a, q := after[0].Account, after[0].Queries
			if a.Charges != int64(tc.pre+1) || a.Refused != 0 || q == nil || !reflect.DeepEqual(q.Curve, wantQ.Curve[:]) || q.Charges != int64(tc.pre+1) {
				t.Fatalf("after %d answers: account %+v, queries %+v", tc.pre+1, a, q)
			}
			if !rc.HasKL || after[0].KL != float64(tc.pre+1)*rc.KL {
				t.Errorf("figures %+v: the period's KL %v is not the answers'", rc, after[0].KL)
			}
		})
	}
}

// TestApplyRefuseCounts: Apply adds a charge without a budget (to the
// answers' account too for an answer), Refuse counts a refusal, and both
// open the period.
func TestApplyRefuseCounts(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		applies, answers, refuses int
	}{
		{"nothing", 0, 0, 0},
		{"refusals only", 0, 0, 3},
		{"releases", 5, 0, 1},
		{"answers", 0, 4, 0},
		{"all", 3, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, k := New(2), Key{"s", 3}
			b.Open(k)
			for i := 0; i < tc.applies; i++ {
				if _, err := b.Apply(k, tests[1], false); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < tc.answers; i++ {
				if _, err := b.Apply(k, tests[4], true); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < tc.refuses; i++ {
				b.Refuse(k)
			}
			s := b.Summary(k, 1e-6)
			if s.Charges != int64(tc.applies+tc.answers) || s.Refused != int64(tc.refuses) || s.WithoutKL != int64(tc.answers) {
				t.Errorf("summary %+v", s)
			}
			if s.AllPure != (tc.applies == 0) {
				t.Errorf("AllPure %v after %d discrete charges", s.AllPure, tc.applies)
			}
			ex := b.Export("s")
			if len(ex) != 1 || (ex[0].Queries != nil) != (tc.answers > 0) || (ex[0].Queries != nil && ex[0].Queries.Charges != int64(tc.answers)) {
				t.Errorf("export %+v", ex)
			}
			if p, ok := b.Latest("s"); p != 3 || !ok {
				t.Errorf("Latest = %d, %v", p, ok)
			}
		})
	}
}

// TestExportImport: exported books import back to books that export and
// decide the same, and a corrupt account is refused with the books left
// as they were.
func TestExportImport(t *testing.T) {
	bud := accountant.Budget{Epsilon: 6, Delta: 1e-6}
	b := New(2)
	for p := int64(0); p < 4; p++ {
		for i, ms := range tests {
			k := Key{"s", p}
			if i%3 == 0 {
				b.ChargeAnswer(k, bud, 2, ms)
			} else {
				b.Charge(k, bud, ms)
			}
		}
	}
	b.Charge(Key{"t", -5}, bud, tests[0])
	c := New(2)
	for _, s := range b.Streams() {
		if err := c.Import(s, b.Export(s)); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(c.Streams(), []string{"s", "t"}) {
		t.Fatalf("streams %v", c.Streams())
	}
	for _, s := range b.Streams() {
		if got, want := c.Export(s), b.Export(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("stream %s: imported %+v\nexported %+v", s, got, want)
		}
	}
	if len(c.Export("s")) != 2 {
		t.Errorf("kept %d periods, want 2", len(c.Export("s")))
	}
	// Both decide the next charges alike.
	for i := 0; i < 30; i++ {
		k, ms := Key{"s", 3}, tests[i%len(tests)]
		r1, e1 := b.ChargeAnswer(k, bud, 2, ms)
		r2, e2 := c.ChargeAnswer(k, bud, 2, ms)
		if r1 != r2 || (e1 == nil) != (e2 == nil) {
			t.Fatalf("answer %d after import: %+v, %v; %+v, %v", i, r1.Allowed, e1, r2.Allowed, e2)
		}
	}

	good := b.Export("s")
	for _, tc := range []struct {
		name    string
		corrupt func(ps []PeriodState)
	}{
		{"short curve", func(ps []PeriodState) { ps[1].Account.Curve = ps[1].Account.Curve[:10] }},
		{"NaN in the curve", func(ps []PeriodState) { ps[1].Account.Curve[3] = math.NaN() }},
		{"negative curve", func(ps []PeriodState) { ps[0].Account.Curve[0] = -1 }},
		{"negative pure", func(ps []PeriodState) { ps[0].Account.Pure = -0.5 }},
		{"NaN approx delta", func(ps []PeriodState) { ps[0].Account.ApproxDelta = math.NaN() }},
		{"negative charges", func(ps []PeriodState) { ps[1].Account.Charges = -1 }},
		{"negative refusals", func(ps []PeriodState) { ps[1].Account.Refused = -3 }},
		{"corrupt query account", func(ps []PeriodState) { ps[1].Queries.ApproxEpsilon = math.Inf(-1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := clonePeriods(good)
			tc.corrupt(ps)
			d := New(2)
			d.Charge(Key{"s", 9}, bud, tests[0])
			before := d.Export("s")
			if err := d.Import("s", ps); err == nil {
				t.Fatal("a corrupt account imported")
			}
			if got := d.Export("s"); !reflect.DeepEqual(got, before) {
				t.Errorf("a refused import changed the books")
			}
		})
	}
}

func clonePeriods(ps []PeriodState) []PeriodState {
	out := make([]PeriodState, len(ps))
	for i, p := range ps {
		out[i] = p
		out[i].Account.Curve = append([]float64(nil), p.Account.Curve...)
		if p.Queries != nil {
			q := *p.Queries
			q.Curve = append([]float64(nil), q.Curve...)
			out[i].Queries = &q
		}
	}
	return out
}

// TestDrop: Drop keeps each stream's last kept periods, counting back from
// its latest, and Export exports only those.
func TestDrop(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kept    int64
		periods map[string][]int64
		want    map[string][]int64
	}{
		{"two kept", 2, map[string][]int64{"a": {0, 1, 2, 3}, "b": {5}}, map[string][]int64{"a": {2, 3}, "b": {5}}},
		{"gaps", 2, map[string][]int64{"a": {-4, 0, 9}, "b": {1, 2}}, map[string][]int64{"a": {9}, "b": {1, 2}}},
		{"one kept", 1, map[string][]int64{"a": {3, 4}}, map[string][]int64{"a": {4}}},
		{"zero is one", 0, map[string][]int64{"a": {3, 4}}, map[string][]int64{"a": {4}}},
		{"three kept", 3, map[string][]int64{"a": {1, 2, 3, 4, 5}}, map[string][]int64{"a": {3, 4, 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(tc.kept)
			for s, ps := range tc.periods {
				for _, p := range ps {
					b.Refuse(Key{s, p})
				}
			}
			exported := map[string][]int64{}
			for s := range tc.periods {
				for _, p := range b.Export(s) {
					exported[s] = append(exported[s], p.Period)
				}
			}
			if !reflect.DeepEqual(exported, tc.want) {
				t.Errorf("exported %v, want %v", exported, tc.want)
			}
			b.Drop()
			open := map[string][]int64{}
			for k := range b.periods {
				open[k.Stream] = append(open[k.Stream], k.Period)
			}
			for _, ps := range open {
				sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			}
			if !reflect.DeepEqual(open, tc.want) {
				t.Errorf("after Drop: %v, want %v", open, tc.want)
			}
			b.Reset()
			if len(b.Streams()) != 0 || len(b.periods) != 0 {
				t.Errorf("Reset kept books")
			}
		})
	}
}

// TestChargeAllocs: a charge of mechanisms seen before, to open books, is
// allocation-free, refused or allowed.
func TestChargeAllocs(t *testing.T) {
	for _, tc := range []struct {
		name string
		bud  accountant.Budget
		ms   []accountant.Mechanism
	}{
		{"allowed, figures", accountant.Budget{Epsilon: 1e9, Delta: 1e-6}, []accountant.Mechanism{dlap, dgau}},
		{"allowed, no figures", accountant.Budget{Epsilon: 1e9, Delta: 1e-6}, []accountant.Mechanism{expo, zcdp}},
		{"refused", accountant.Budget{Epsilon: 1e-3, Delta: 1e-6}, []accountant.Mechanism{gau}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, k := New(2), Key{"s", 1}
			if _, err := b.Charge(k, tc.bud, tc.ms); err != nil {
				t.Fatal(err)
			}
			if n := testing.AllocsPerRun(200, func() {
				if _, err := b.Charge(k, tc.bud, tc.ms); err != nil {
					t.Fatal(err)
				}
			}); n != 0 {
				t.Errorf("%v allocations per charge", n)
			}
		})
	}
}

// BenchmarkCharge is the hot path: a window's charge of two mechanisms
// (figures cached) to its period's open books.
func BenchmarkCharge(b *testing.B) {
	bk, k := New(2), Key{"trips", 42}
	bud := accountant.Budget{Epsilon: 1e9, Delta: 1e-6}
	ms := []accountant.Mechanism{dlap, dgau}
	if _, err := bk.Charge(k, bud, ms); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if rc, err := bk.Charge(k, bud, ms); err != nil || !rc.Allowed {
			b.Fatal(rc.Allowed, err)
		}
	}
}

// TestImports: the books are DP mathematics: besides the standard library
// they import the accountant and its capacity figures only (no Kafka,
// record schema or stage).
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(p, ".") && p != "github.com/dpstream/dpstream/accountant" && p != "github.com/dpstream/dpstream/accountant/capacity" {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}
