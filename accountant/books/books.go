package books

import (
	"sort"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/accountant/capacity"
)

// Key names one budget period of one stream: the books are kept per key.
type Key struct {
	Stream string
	Period int64
}

// Books holds, per Key, the period's account, its answers' account and
// its composed KL figures, and the figures of every mechanism seen (a
// cache: numerical figures take milliseconds, and every window charges
// the same mechanisms). Make one with New.
//
// Every method that names a key opens its books if they are not open
// (empty accounts, no figures): from then on the period counts for
// Latest, Export and Drop, as a period the stage has decided anything in.
type Books struct {
	kept    int64
	periods map[Key]*period
	latest  map[string]int64 // per stream with books, its latest period
	figures map[accountant.Mechanism]figure
}

// period is one Key's books.
type period struct {
	account accountant.Account
	// queries is the account of the period's answers alone (held
	// against the stream's query share); hasQueries is false until an
	// answer is charged or applied to it.
	queries    accountant.Account
	hasQueries bool
	kl         sums
}

// sums are a period's composed figures: the sums of its charges'
// unrestricted and linear-adversary KL (capacity.ComposeNonAdaptive), over
// the charges that have them, and how many charges have none.
type sums struct {
	kl, linear float64
	without    int64
}

// figure is one mechanism's cached figures: ok false when it has none.
type figure struct {
	p  capacity.Pair
	ok bool
}

// New returns empty books that keep (Export) and do not drop (Drop) the
// last kept budget periods of each stream, counting back from its latest.
// kept below 1 is taken as 1: a stream's latest period is always kept.
func New(kept int64) *Books {
	b := &Books{kept: max(kept, 1), figures: map[accountant.Mechanism]figure{}}
	b.Reset()
	return b
}

// Reset forgets every period's books (before they are rebuilt from a
// checkpoint or the ledger). The figure cache stays: a figure depends on
// its mechanism alone.
func (b *Books) Reset() {
	b.periods, b.latest = map[Key]*period{}, map[string]int64{}
}

// open returns k's books, opening them if they are not open.
func (b *Books) open(k Key) *period {
	if p := b.periods[k]; p != nil {
		return p
	}
	// A new account is pure until a charge says otherwise, as a
	// checkpoint records it (AllPure).
	p := &period{account: accountant.Account{AllPure: true}}
	b.periods[k] = p
	if l, ok := b.latest[k.Stream]; !ok || k.Period > l {
		b.latest[k.Stream] = k.Period
	}
	return p
}

// Open opens k's books if they are not open: for a period decided without
// a charge or a refusal (a skipped window), which exists in the live books
// and so must in rebuilt ones.
func (b *Books) Open(k Key) { b.open(k) }

// Receipt is the accountant's answer to one charge.
//
// Curve is the account's RDP curve after the charge (for a refused charge,
// the unchanged account's), not the charge's own: the charge's curve is
// fixed by the configuration and the same for every window
// (accountant.Mechanism.Curve gives it), while the account's is what the
// decision was made on and what Spent converts, so a receipt states the
// books the charge left. It is an array, as in accountant.Account, so
// that a receipt is an independent copy and issuing one allocates nothing.
type Receipt struct {
	// Allowed is the filter's decision: the charge was made.
	Allowed bool
	// QueryRefused is, for an answer (ChargeAnswer) not allowed, whether
	// the query share refused it though the stream's budget would have
	// held it.
	QueryRefused bool
	// Spent is the account's ε at the budget's δ after the charge (0 from
	// Apply, which has no budget: Spent or Summary give it at any δ).
	Spent float64
	Curve [accountant.NumOrders]float64
	// KL and LinearKL are the charge's own figures, its unrestricted KL
	// and its KL against linear adversaries (the sums over its mechanisms,
	// by non-adaptive composition), which its ledger record carries;
	// HasKL is false when a mechanism has none (a kind without an
	// additive-noise law, or a figure that cannot be computed), and for a
	// charge not allowed (it has no figures: nothing ran).
	KL, LinearKL float64
	HasKL        bool
}

// Charge offers one charge (the mechanisms of one release, composed) to
// the budget filter of k's account: accountant.Account.Try against bud.
// Allowed, the charge is applied and its figures are composed into the
// period's; refused, the account counts a refusal and nothing else
// changes. An invalid budget or mechanism, or a corrupt account, is an
// error and changes nothing.
func (b *Books) Charge(k Key, bud accountant.Budget, ms []accountant.Mechanism) (Receipt, error) {
	p := b.open(k)
	ok, err := p.account.Try(bud, ms)
	if err != nil {
		return Receipt{}, err
	}
	var rc Receipt
	if ok {
		b.compose(p, ms, &rc)
	}
	rc.Spent = p.account.Spent(bud.Delta)
	rc.Curve = p.account.Curve
	return rc, nil
}

// ChargeAnswer offers an answer's charge to k's account against bud and,
// with a query share (share > 0), to the account of k's answers alone
// against {share, bud.Delta}: allowed only when both hold it, and then
// charged to both; otherwise to neither. Without a share the answers'
// account takes the charge without a budget (Apply), as a restore from the
// ledger gives it, so that live and rebuilt books agree.
//
// A refused answer leaves the books as they were: unlike a refused
// release it is not counted among the refusals, for it is not in the
// ledger (a refusal draws nothing, and a flood of queries past the budget
// must not grow the ledger), so rebuilt books would not count it, and the
// lost-ledger check compares published counts with rebuilt ones. An
// error, too, changes nothing.
func (b *Books) ChargeAnswer(k Key, bud accountant.Budget, share float64, ms []accountant.Mechanism) (Receipt, error) {
	p := b.open(k)
	saved := *p
	ok, err := p.account.Try(bud, ms)
	if err == nil && ok {
		p.hasQueries = true
		if share > 0 {
			var qok bool
			qok, err = p.queries.Try(accountant.Budget{Epsilon: share, Delta: bud.Delta}, ms)
			if err == nil && !qok {
				*p = saved
				rc := Receipt{QueryRefused: true, Spent: p.account.Spent(bud.Delta), Curve: p.account.Curve}
				return rc, nil
			}
		} else {
			err = p.queries.Apply(ms)
		}
	}
	if err != nil || !ok {
		*p = saved
		if err != nil {
			return Receipt{}, err
		}
		return Receipt{Spent: p.account.Spent(bud.Delta), Curve: p.account.Curve}, nil
	}
	var rc Receipt
	b.compose(p, ms, &rc)
	rc.Spent = p.account.Spent(bud.Delta)
	rc.Curve = p.account.Curve
	return rc, nil
}

// Apply adds one charge the filter accepted earlier (a ledger record) to
// k's account, and with answer to its answers' account too, without
// consulting any budget, and composes its figures: for rebuilding the
// books from the ledger; for a new charge it would bypass the budget. The
// receipt is allowed, with no Spent (there is no budget δ). An invalid
// mechanism or a corrupt account is an error and changes nothing.
func (b *Books) Apply(k Key, ms []accountant.Mechanism, answer bool) (Receipt, error) {
	p := b.open(k)
	var saved period
	if answer {
		saved = *p
	}
	if err := p.account.Apply(ms); err != nil {
		return Receipt{}, err
	}
	if answer {
		p.hasQueries = true
		if err := p.queries.Apply(ms); err != nil {
			*p = saved
			return Receipt{}, err
		}
	}
	rc := Receipt{Allowed: true}
	b.compose(p, ms, &rc)
	rc.Curve = p.account.Curve
	return rc, nil
}

// Refuse counts one refused charge in k's account: a continual release's
// window whose horizon's charge was refused, or a refusal read from the
// ledger.
func (b *Books) Refuse(k Key) { b.open(k).account.Refused++ }

// compose composes an accepted charge's figures into p's and puts them in
// the receipt.
func (b *Books) compose(p *period, ms []accountant.Mechanism, rc *Receipt) {
	rc.Allowed = true
	f, ok := b.figuresOf(ms)
	if !ok {
		p.kl.without++
		return
	}
	rc.KL, rc.LinearKL, rc.HasKL = f.Unrestricted, f.Restricted, true
	p.kl.kl += f.Unrestricted
	p.kl.linear = capacity.ComposeNonAdaptive(p.kl.linear, f.Restricted)
}

// figuresOf returns a charge's unrestricted KL and its capacity-bounded
// KL against linear adversaries (accountant/capacity, class linear, KL):
// the sums over its mechanisms, by non-adaptive composition (the
// mechanisms' noise draws are independent, and none depends on another's
// output). ok is false when a mechanism has no figure: a kind without an
// additive-noise law (approx_dp, exponential, zcdp, randomized_response,
// pure: capacity.ErrUnsupported) or one whose figure cannot be computed
// (a discrete kind whose sensitivity is not an integer). An empty charge
// has the figures 0. The figures are reported, never charged, so a
// mechanism without one is not an error.
func (b *Books) figuresOf(ms []accountant.Mechanism) (p capacity.Pair, ok bool) {
	for _, m := range ms {
		e, hit := b.figures[m]
		if !hit {
			f, err := capacity.Figures(m, capacity.Linear, capacity.KL())
			e = figure{p: f, ok: err == nil}
			b.figures[m] = e
		}
		if !e.ok {
			return capacity.Pair{}, false
		}
		p.Restricted = capacity.ComposeNonAdaptive(p.Restricted, e.p.Restricted)
		p.Unrestricted += e.p.Unrestricted
	}
	return p, true
}

// Spent returns the ε k's account has spent at delta
// (accountant.Account.Spent).
func (b *Books) Spent(k Key, delta float64) float64 { return b.open(k).account.Spent(delta) }

// Summary is a period's books as a budget state reports them.
type Summary struct {
	Charges, Refused int64   // the account's accepted and refused charges
	Spent            float64 // its ε at the summary's δ
	// Pure is the sum of the pure ε of its charges, a bound when AllPure
	// (every charge was pure).
	Pure    float64
	AllPure bool
	// KL and LinearKL are the composed figures of its charges that have
	// them; WithoutKL counts those that have none.
	KL, LinearKL float64
	WithoutKL    int64
}

// Summary returns k's books at delta.
func (b *Books) Summary(k Key, delta float64) Summary {
	p := b.open(k)
	a := &p.account
	return Summary{Charges: int64(a.Charges), Refused: int64(a.Refused), Spent: a.Spent(delta),
		Pure: a.Pure, AllPure: a.AllPure, KL: p.kl.kl, LinearKL: p.kl.linear, WithoutKL: p.kl.without}
}

// Latest returns the stream's latest budget period with books (ok false
// when it has none).
func (b *Books) Latest(stream string) (p int64, ok bool) {
	p, ok = b.latest[stream]
	return p, ok
}

// Streams returns the streams that have books, sorted.
func (b *Books) Streams() []string {
	out := make([]string, 0, len(b.latest))
	for s := range b.latest {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Drop drops the books of every period older than its stream's last kept
// ones (see New), so that memory stays bounded whatever the history.
func (b *Books) Drop() {
	for k := range b.periods {
		if k.Period <= b.latest[k.Stream]-b.kept {
			delete(b.periods, k)
		}
	}
}
