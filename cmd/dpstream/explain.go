package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/accountant/capacity"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
)

func cmdExplain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("explain", "-c pipeline.yaml", `
Print, for every release of every stream, what the configuration implies:
the sensitivity derived from the enforced bounds (add/remove one privacy
unit, at most max_events_per_window events each), the noise distribution
and scale, the expected absolute error of a released value, the privacy
cost of one window and how many windows the stream's budget lasts. Nothing
connects to Kafka.`, stdout, stderr)
	cfgPath := fs.String("c", "pipeline.yaml", "pipeline config file")
	fs.StringVar(cfgPath, "config", "pipeline.yaml", "same as -c")
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	_, ps, ok := load(*cfgPath, stderr)
	if !ok {
		return exitConfig
	}
	explain(stdout, ps)
	return exitOK
}

func explain(w io.Writer, ps []plan.Stream) {
	for i, s := range ps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		c := s.Config
		per := "over the stream's lifetime"
		if s.Per > 0 {
			per = "per " + s.Per.String()
		}
		fmt.Fprintf(w, "stream %s  (topic %s, unit %s, window %s, ≤ %d events per unit per window)\n",
			c.Name, c.Topic, c.PrivacyUnit, c.Window.Size, c.Contribution.MaxEventsPerWindow)
		fmt.Fprintf(w, "  budget ε=%g at δ=%g %s\n\n", s.Budget.Epsilon, s.Budget.Delta, per)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  release\tkind\tsensitivity\tnoise\tE|error|\tε per window\twindows alone\tKL linear (any)")
		for _, r := range s.Releases {
			var sens, noise []string
			for _, n := range r.Noise {
				switch n.Mechanism {
				case "approx_dp":
					// A mechanism proved (ε, δ)-DP as a whole: no
					// sensitivity or scale to show.
					sens = append(sens, fmt.Sprintf("%s (ε=%.4g, δ=%.3g as a whole)", n.Purpose, n.Epsilon, n.Delta))
					// The mechanism is named by its purpose
					// ("posterior_sample", "key_selection").
					noise = append(noise, strings.ReplaceAll(n.Purpose, "_", " "))
					continue
				case "exponential":
					sens = append(sens, fmt.Sprintf("%s (ε=%.4g)", n.Purpose, n.Epsilon))
					noise = append(noise, "exponential mechanism")
					continue
				case "zcdp":
					if n.Purpose == kind.PurposeContinual {
						sens = append(sens, fmt.Sprintf("%s Δ2=%.4g over the horizon (ρ=%.4g zCDP)", n.Purpose, n.Sensitivity, n.Epsilon))
						noise = append(noise, fmt.Sprintf("discrete Gaussian(σ=%.4g) on the factor's lattice", n.Scale))
						continue
					}
					sens = append(sens, fmt.Sprintf("%s (ρ=%.4g zCDP, any selected model)", n.Purpose, n.Epsilon))
					noise = append(noise, "AdaSSP on the selected features")
					continue
				}
				norm, dist := "Δ1", fmt.Sprintf("Laplace(b=%.4g)", n.Scale)
				switch n.Mechanism {
				case "discrete_laplace":
					dist = fmt.Sprintf("discrete Laplace(t=%.4g)", n.Scale)
				case "gaussian":
					norm, dist = "Δ2", fmt.Sprintf("Gaussian(σ=%.4g)", n.Scale)
				case "discrete_gaussian":
					norm, dist = "Δ2", fmt.Sprintf("discrete Gaussian(σ=%.4g)", n.Scale)
				}
				sens = append(sens, fmt.Sprintf("%s %s=%.4g", n.Purpose, norm, n.Sensitivity))
				noise = append(noise, dist)
			}
			alone := plan.ReleaseWindows([]plan.Release{r}, s.Budget)
			cost := fmt.Sprintf("%.4g", r.Cost)
			if rp, ok := r.Kind.(kind.Running); ok {
				cost += fmt.Sprintf(" per %d", rp.Horizon())
			}
			kl := "n/a"
			if p, err := capacity.ComposeFigures(r.Mechanisms, capacity.Linear, capacity.KL()); err == nil {
				kl = fmt.Sprintf("%.4g (%.4g)", p.Restricted, p.Unrestricted)
				if rp, ok := r.Kind.(kind.Running); ok {
					kl += fmt.Sprintf(" per %d", rp.Horizon())
				}
			}
			aloneDesc := windowsDesc(alone)
			if len(r.Mechanisms) == 0 {
				aloneDesc = "no charge"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Config.Name, r.Kind.Describe(), strings.Join(sens, "; "),
				strings.Join(noise, "; "), r.Kind.Accuracy(), cost, aloneDesc, kl)
		}
		tw.Flush()
		fmt.Fprintf(w, "\n  all releases: ε=%.4g per window (RDP composition at δ=%g); the budget lasts %s %s.\n",
			s.PerWindow, s.Budget.Delta, windowsDesc(s.Windows), per)
		switch perPeriod := int(s.Per / c.Window.Size); {
		case s.Windows == 0:
		case s.Per > 0 && s.Windows >= perPeriod:
			fmt.Fprintf(w, "  a %s period holds %d windows of %s, so every window is released; the budget renews each period.\n", s.Per, perPeriod, c.Window.Size)
		case s.Per > 0:
			fmt.Fprintf(w, "  a %s period holds %d windows of %s: after the first %d of a period, releases are published as budget_exhausted until the next period.\n", s.Per, perPeriod, c.Window.Size, s.Windows)
		default:
			fmt.Fprintf(w, "  with %s windows that is %s of data; after that releases are published as budget_exhausted.\n",
				c.Window.Size, durationDesc(float64(s.Windows)*c.Window.Size.Seconds()))
		}
		answersNote(w, s, per)
		pureNote(w, s)
		klNote(w, s)
		kindNotes(w, s)
	}
}

// answersNote says, for each release that answers queries, what one
// answer costs and how many the budget pays for: its windows cost nothing,
// its answers spend the stream's budget beside the releases.
func answersNote(w io.Writer, s plan.Stream, per string) {
	for _, r := range s.Releases {
		p, ok := r.Kind.(kind.Predictor)
		if !ok {
			continue
		}
		for _, op := range []string{kind.OpPredict, kind.OpEvaluate} {
			cs := p.QueryCharges(op) // none: the release does not answer op
			if len(cs) == 0 {
				continue
			}
			var ms []accountant.Mechanism
			var eps, delta float64
			var mech []string
			for _, c := range cs {
				ms = append(ms, c.Mechanism)
				eps, delta = eps+c.Noise.Epsilon, delta+c.Noise.Delta
				mech = append(mech, strings.ReplaceAll(c.Noise.Mechanism, "_", " "))
			}
			cost := fmt.Sprintf("ε=%.4g", eps)
			if delta > 0 {
				cost += fmt.Sprintf(", δ=%.3g", delta)
			}
			pays := "the budget alone pays for"
			b := s.Budget
			if q := s.Config.Budget.Queries; q > 0 {
				pays, b.Epsilon = fmt.Sprintf("budget.queries (ε=%g) pays for", q), q
			}
			n := plan.AnswersUntil(ms, b)
			line := fmt.Sprintf("  %s answers queries (%s): each answer costs %s (%s), charged to the budget period of the window whose models answer; %s %s %s",
				r.Config.Name, op, cost, strings.Join(mech, ", "), pays, countDesc(n, "answer"), per)
			if lim := p.QueryLimit(); lim > 0 {
				line += fmt.Sprintf(", and max_queries allows %d per window", lim)
			}
			if s.Config.Budget.Queries > 0 {
				fmt.Fprintln(w, line+".")
			} else {
				fmt.Fprintln(w, line+"; queries share it with the releases (budget.queries reserves them a share).")
			}
		}
	}
}

func countDesc(n int, what string) string {
	if n >= 1_000_000 {
		return "≥ 1,000,000 " + what + "s"
	}
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func windowsDesc(n int) string {
	if n >= 1_000_000 {
		return "≥ 1,000,000 windows"
	}
	if n == 1 {
		return "1 window"
	}
	return fmt.Sprintf("%d windows", n)
}

func durationDesc(sec float64) string {
	switch {
	case sec >= 2*86400:
		return fmt.Sprintf("%.1f days", sec/86400)
	case sec >= 2*3600:
		return fmt.Sprintf("%.1f hours", sec/3600)
	case sec >= 120:
		return fmt.Sprintf("%.1f minutes", sec/60)
	}
	return fmt.Sprintf("%.0f seconds", sec)
}

// pureNote explains when plain composition of pure ε beats RDP.
func pureNote(w io.Writer, s plan.Stream) {
	pure := 0.0
	for _, r := range s.Releases {
		for _, m := range r.Mechanisms {
			e, ok := m.PureEpsilon()
			if !ok {
				return
			}
			pure += e
		}
	}
	if pure <= 0 {
		return
	}
	n := int(math.Floor(s.Budget.Epsilon/pure + 1e-9))
	fmt.Fprintf(w, "  every release is pure ε-DP: basic composition alone would allow %d windows (ε=%.4g each); the accountant uses whichever bound is smaller.\n", n, pure)
}

// kindNotes prints the warnings of each release's kind about settings
// whose effect the table cannot show (kind.Plan.Notes): e.g. model
// selection's sensitivity to radius and penalty, or the δ an (ε, δ)
// posterior sample uses up.
func kindNotes(w io.Writer, s plan.Stream) {
	for _, r := range s.Releases {
		for _, n := range r.Kind.Notes() {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
	}
}

// klNote prints the stream's capacity-bounded figure per window: the KL
// its releases' charges give an adversary restricted to linear functions
// of the outputs, composed non-adaptively, beside the unrestricted KL
// (accountant/capacity; the ledger and the budget state record the same
// figures). Releases whose charge has no additive-noise figure are named
// and left out.
func klNote(w io.Writer, s plan.Stream) {
	var sum capacity.Pair
	var in, out []string
	for _, r := range s.Releases {
		if _, ok := r.Kind.(kind.Running); ok {
			out = append(out, r.Config.Name) // charged once per horizon, not per window
			continue
		}
		p, err := capacity.ComposeFigures(r.Mechanisms, capacity.Linear, capacity.KL())
		if err != nil {
			out = append(out, r.Config.Name)
			continue
		}
		in = append(in, r.Config.Name)
		sum.Restricted = capacity.ComposeNonAdaptive(sum.Restricted, p.Restricted)
		sum.Unrestricted += p.Unrestricted
	}
	if len(in) == 0 {
		return
	}
	scope := "all releases"
	if len(out) > 0 {
		scope = strings.Join(in, ", ") + " (not " + strings.Join(out, ", ") + ")"
	}
	fmt.Fprintf(w, "  against linear adversaries, %s: KL %.4g per window (unrestricted KL %.4g), non-adaptive composition; a relaxation, the budget enforces ε.\n",
		scope, sum.Restricted, sum.Unrestricted)
}
