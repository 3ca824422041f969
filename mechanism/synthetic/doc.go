// Package synthetic draws synthetic samples from a released histogram
// (Histogram) or density (Density). They read only the released numbers,
// so they are post-processing and carry exactly the release's guarantee
// at no extra budget (Dwork & Roth 2014, Prop. 2.1); see synthetic.go.
package synthetic
