avro/n (count)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 0.5 of 100
value 35 ± 12 (95% noise interval)

avro/m (mean)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 1 of 100
value 2.81168 ± 6.23926 (95% noise interval)

avro/h (histogram)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 1.5 of 100
2 × 5 bins over x × z on [0, 10] × [0, 10]; shade ∝ probability
0 │████▒▒▒▒    ████    
5 │▓▓▓▓████▒▒▒▒▓▓▓▓▒▒▒▒
  └────────────────────
   0                 10
█ = largest cell, 19.3%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: x, columns: z

avro/r (randomized_response)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 2 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │██████████████████████████████████████████████████████████████████████ 47.9%   22 ± 22.2147
app     │██████████████████████████████████████████▋                            29.2%   16 ± 21.9538
cash    │█████████████████████████████████▌                                     22.9%   14 ± 21.8661
voucher │                                                                        0.0%  -20 ± 21.2423
local ε = 1.61 per report (randomized by producers); central noise as configured

avro/n (count)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 2.5 of 100
value 46 ± 12 (95% noise interval)

avro/m (mean)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 3 of 100
value 4.46777 ± 4.53505 (95% noise interval)

avro/h (histogram)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 3.5 of 100
2 × 5 bins over x × z on [0, 10] × [0, 10]; shade ∝ probability
0 │▓▓▓▓▓▓▓▓░░░░████████
5 │    ▒▒▒▒            
  └────────────────────
   0                 10
█ = largest cell, 27.3%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: x, columns: z

avro/r (randomized_response)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 4 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │████████████████████████████████████████████████████████████████████ 64.6%  33.75 ± 23.3374
app     │████████████▏                                                        11.6%   7.75 ± 22.2417
cash    │█████████████████████████                                            23.8%  13.75 ± 22.4993
voucher │                                                                      0.0%  -6.25 ± 21.9045
local ε = 1.61 per report (randomized by producers); central noise as configured

avro/n (count)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 4.5 of 100
value 46 ± 12 (95% noise interval)

avro/m (mean)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 4.99 of 100
value 3.66641 ± 4.45026 (95% noise interval)

avro/h (histogram)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 5.49 of 100
2 × 5 bins over x × z on [0, 10] × [0, 10]; shade ∝ probability
0 │▓▓▓▓▓▓▓▓░░░░▒▒▒▒████
5 │░░░░        ████░░░░
  └────────────────────
   0                 10
█ = largest cell, 26.1%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: x, columns: z

avro/r (randomized_response)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 5.98 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │██████████████████████████████████████████████████████████████████████ 77.5%   48 ± 23.2704
app     │████████████████████▍                                                  22.5%   26 ± 22.6853
cash    │                                                                        0.0%  -12 ± 21.5564
voucher │                                                                        0.0%  -22 ± 21.5564
local ε = 1.61 per report (randomized by producers); central noise as configured

avro/n (count)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 6.46 of 100
value 40 ± 12 (95% noise interval)

avro/m (mean)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 6.89 of 100
value 5.75732 ± 3.95126 (95% noise interval)

avro/h (histogram)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 7.33 of 100
2 × 5 bins over x × z on [0, 10] × [0, 10]; shade ∝ probability
0 │████▒▒▒▒████▒▒▒▒████
5 │▓▓▓▓    ░░░░░░░░▓▓▓▓
  └────────────────────
   0                 10
█ = largest cell, 20.7%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: x, columns: z

avro/r (randomized_response)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 7.77 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │███████████████████████████████████████████████████████████████████ 89.1%   36.25 ± 21.9154
app     │████████▏                                                           10.9%   18.25 ± 21.7063
cash    │                                                                     0.0%  -29.75 ± 20.8832
voucher │                                                                     0.0%   -1.75 ± 20.8832
local ε = 1.61 per report (randomized by producers); central noise as configured

avro/n (count)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 8.2 of 100
value 50 ± 12 (95% noise interval)

avro/m (mean)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 8.51 of 100
value 5.98486 ± 3.60448 (95% noise interval)

avro/h (histogram)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 8.92 of 100
2 × 5 bins over x × z on [0, 10] × [0, 10]; shade ∝ probability
0 │▒▒▒▒████▒▒▒▒░░░░▒▒▒▒
5 │▒▒▒▒████░░░░    ▒▒▒▒
  └────────────────────
   0                 10
█ = largest cell, 26.4%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: x, columns: z

avro/r (randomized_response)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 9.32 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │████████████████████████████████████████████████████████████████████ 78.6%  29.25 ± 22.6376
app     │██████████████████▌                                                  21.4%   9.25 ± 21.7725
cash    │                                                                      0.0%  -0.75 ± 21.3606
voucher │                                                                      0.0%  -2.75 ± 21.3606
local ε = 1.61 per report (randomized by producers); central noise as configured

avro/n (count)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 9.71 of 100
value 33 ± 12 (95% noise interval)

avro/m (mean)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 9.97 of 100
value 0 ± 10 (95% noise interval)

avro/h (histogram)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 10.4 of 100
2 × 5 bins over x × z on [0, 10] × [0, 10]; shade ∝ probability
0 │████▒▒▒▒░░░░    ████
5 │░░░░▒▒▒▒▒▒▒▒░░░░    
  └────────────────────
   0                 10
█ = largest cell, 28.6%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: x, columns: z

avro/r (randomized_response)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 10.7 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │█████████████████████████████████████████████████████████████████████ 76.3%  34.5 ± 22.9692
app     │█████████████████████▍                                                23.7%  14.5 ± 22.1172
cash    │                                                                       0.0%  -1.5 ± 21.4783
voucher │                                                                       0.0%  -9.5 ± 21.4783
local ε = 1.61 per report (randomized by producers); central noise as configured

