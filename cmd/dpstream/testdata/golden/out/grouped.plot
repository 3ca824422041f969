grouped/n (count)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 0.986 of 1000
4 values of cat; the 4 largest, bar ∝ value, then value ± 95% noise interval

   card │██████████████████████████████████████████████████████████████████████████████████   15 ± 9
   cash │█████████████████████▉                                                                4 ± 9
voucher │██████████▉                                                                           2 ± 9
   none │(negative)                                                                           -3 ± 9

grouped/nsel (count)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 4.98 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   20 ± 4
 app │███████████████████████████████████████████████████████████▌                            14 ± 4

grouped/s (sum)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 8.18 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │██████████████████████████████████████████████████████████████████████████   182.257 ± 106.732

grouped/m (mean)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 10 of 1000
6 values of z; the 6 largest, bar ∝ value, then value ± 95% noise interval

1 │███████████████████████████████████████████████████████████████████████████████████████   40 ± 40
2 │███████████████████████████████████████████████████████████████████████████████████████   40 ± 40
3 │███████████████████████████████████████████████████████████████████████████████████████   40 ± 40
5 │███████████████████████████████████████████████████████████████████████████████████████   40 ± 40
9 │███████████████████████████████████████████████████████████████████████████████████████   40 ± 40
8 │                                                                                           0 ± 40

grouped/u (count_units)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 10.9 of 1000
value 25 ± 3 (95% noise interval)

grouped/uk (count_units)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 14.9 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

app │██████████████████████████████████████████████████████████████████████████████████████   11 ± 4

grouped/sel (select_keys)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 16.9 of 1000
1 cat values selected: card

grouped/v (variance)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 18.5 of 1000
value 36.1787 ± 177.095 (95% noise interval)

grouped/vk (variance)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 18.9 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │                                                                                       0 ± 400
cash │                                                                                       0 ± 400

grouped/q (quantiles)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 20.9 of 1000
ranks q0.25  q0.5  q0.75; ± the 95% bound on the rank error

16.2727  21.5952  25.7748  (rank ± 1)

grouped/qk (quantiles)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 24.8 of 1000
ranks q0.1  q0.5  q0.9; ± the 95% bound on the rank error

card  5.83333  17.0312  28.4401  (rank ± 1)
cash  10.3125  20  29.8125  (rank ± 1)

grouped/n (count)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 25.6 of 1000
4 values of cat; the 4 largest, bar ∝ value, then value ± 95% noise interval

   card │██████████████████████████████████████████████████████████████████████████████████   20 ± 9
voucher │████████▎                                                                             2 ± 9
   none │(negative)                                                                           -2 ± 9
   cash │(negative)                                                                           -4 ± 9

grouped/nsel (count)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 29.6 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   32 ± 4
 app │█████████████████████████████▎                                                          11 ± 4

grouped/s (sum)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 32 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │██████████████████████████████████████████████████████████████████████████   173.141 ± 106.732

grouped/m (mean)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 33.6 of 1000
6 values of z; the 6 largest, bar ∝ value, then value ± 95% noise interval

9 │██████████████████████████████████████████████████████████████████████████████████   23.0555 ± 40
5 │███████████████████████████████████████████████▌                                     13.3693 ± 40
1 │████████████████████████████████▌                                                    9.13833 ± 40
8 │███████████████████                                                                  5.33315 ± 40
2 │                                                                                           0 ± 40
3 │                                                                                           0 ± 40

grouped/u (count_units)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 34.4 of 1000
value 28 ± 3 (95% noise interval)

grouped/uk (count_units)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 38.3 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   22 ± 4

grouped/sel (select_keys)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 40.3 of 1000
2 cat values selected: app, card

grouped/v (variance)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 41.5 of 1000
value 15.0414 ± 157.779 (95% noise interval)

grouped/vk (variance)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 41.8 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

cash │██████████████████████████████████████████████████████████████████████████████   13.5141 ± 400
card │                                                                                       0 ± 400

grouped/q (quantiles)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 43.7 of 1000
ranks q0.25  q0.5  q0.75; ± the 95% bound on the rank error

12.6676  14.3509  23.2132  (rank ± 1)

grouped/qk (quantiles)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 47.6 of 1000
ranks q0.1  q0.5  q0.9; ± the 95% bound on the rank error

app  25.4514  30.9914  32.1983  (rank ± 1)
card  31.95  32.7404  38.4226  (rank ± 1)

grouped/n (count)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 48.4 of 1000
4 values of cat; the 4 largest, bar ∝ value, then value ± 95% noise interval

   card │██████████████████████████████████████████████████████████████████████████████████   21 ± 9
voucher │███████▊                                                                              2 ± 9
   cash │(negative)                                                                           -1 ± 9
   none │(negative)                                                                           -5 ± 9

grouped/nsel (count)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 52.3 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   28 ± 4
 app │█████████████████████████████████████████████████████████▋                              19 ± 4

grouped/s (sum)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 54.6 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │██████████████████████████████████████████████████████████████████████████   51.8014 ± 106.732

grouped/m (mean)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 56 of 1000
6 values of z; the 6 largest, bar ∝ value, then value ± 95% noise interval

9 │█████████████████████████████████████████████████████████████████████████████             40 ± 40
8 │████████████████████████████████████████████████████████████▌                        31.4422 ± 40
1 │██████████████████████████████████████████▎                                     21.9487 ± 24.2899
2 │███████████████████████████▍                                                         14.2188 ± 40
3 │                                                                                           0 ± 40
5 │                                                                                           0 ± 40

grouped/u (count_units)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 56.7 of 1000
value 23 ± 3 (95% noise interval)

grouped/uk (count_units)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 60.6 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   17 ± 4

grouped/sel (select_keys)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 62.6 of 1000
2 cat values selected: app, card

grouped/v (variance)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 63.7 of 1000
value 0 ± 340.095 (95% noise interval)

grouped/vk (variance)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 64 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │██████████████████████████████████████████████████████████████████████████   91.5927 ± 287.434
cash │                                                                                       0 ± 400

grouped/q (quantiles)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 65.8 of 1000
ranks q0.25  q0.5  q0.75; ± the 95% bound on the rank error

7.86613  13.5813  21.3408  (rank ± 1)

grouped/qk (quantiles)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 69.7 of 1000
ranks q0.1  q0.5  q0.9; ± the 95% bound on the rank error

app  7.71094  27.6339  33.3594  (rank ± 1)
card  12.4086  18.7019  32.75  (rank ± 1)

grouped/n (count)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 70.4 of 1000
4 values of cat; the 4 largest, bar ∝ value, then value ± 95% noise interval

   card │██████████████████████████████████████████████████████████████████████████████████   31 ± 9
voucher │███████▉                                                                              3 ± 9
   cash │                                                                                      0 ± 9
   none │(negative)                                                                           -6 ± 9

grouped/nsel (count)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 74.2 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   23 ± 4
 app │██████████████████████████████████████████████████████████████████████▎                 19 ± 4

grouped/s (sum)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 76.5 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │██████████████████████████████████████████████████████████████████████████   51.3624 ± 106.732

grouped/m (mean)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 77.9 of 1000
6 values of z; the 6 largest, bar ∝ value, then value ± 95% noise interval

1 │██████████████████████████████████████████████████████████████████████████████████        40 ± 40
5 │██████████████▏                                                                      6.89213 ± 40
2 │                                                                                           0 ± 40
3 │                                                                                           0 ± 40
8 │                                                                                           0 ± 40
9 │                                                                                           0 ± 40

grouped/u (count_units)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 78.6 of 1000
value 25 ± 3 (95% noise interval)

grouped/uk (count_units)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 82.4 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   17 ± 4

grouped/sel (select_keys)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 84.4 of 1000
2 cat values selected: app, card

grouped/v (variance)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 85.4 of 1000
value 53.9879 ± 175.913 (95% noise interval)

grouped/vk (variance)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 85.7 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │                                                                                       0 ± 400
cash │                                                                                       0 ± 400

grouped/q (quantiles)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 87.5 of 1000
ranks q0.25  q0.5  q0.75; ± the 95% bound on the rank error

10.5322  13.1834  26.2433  (rank ± 1)

grouped/qk (quantiles)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 91.4 of 1000
ranks q0.1  q0.5  q0.9; ± the 95% bound on the rank error

app  11.4104  18.1473  19.1562  (rank ± 1)
card  12.8  26.9535  27.4257  (rank ± 1)

grouped/n (count)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 92 of 1000
4 values of cat; the 4 largest, bar ∝ value, then value ± 95% noise interval

   card │██████████████████████████████████████████████████████████████████████████████████   20 ± 9
   cash │████████▎                                                                             2 ± 9
   none │████▏                                                                                 1 ± 9
voucher │████▏                                                                                 1 ± 9

grouped/nsel (count)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 95.8 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   25 ± 4
 app │█████████████████████████████████████████████████████████████▎                          18 ± 4

grouped/s (sum)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 98.1 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │██████████████████████████████████████████████████████████████████████████   103.074 ± 106.732
 app │████████████▍                                                                17.2566 ± 106.732

grouped/m (mean)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 99.4 of 1000
6 values of z; the 6 largest, bar ∝ value, then value ± 95% noise interval

9 │█████████████████████████████████████████████████████████████████████████████        31.8218 ± 40
2 │███████████████████████████████████████████████████▍                            21.2286 ± 26.1032
5 │████████████████████████▋                                                            10.1592 ± 40
1 │                                                                                           0 ± 40
3 │                                                                                           0 ± 40
8 │                                                                                           0 ± 40

grouped/u (count_units)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 100 of 1000
value 27 ± 3 (95% noise interval)

grouped/uk (count_units)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 104 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   18 ± 4

grouped/sel (select_keys)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 106 of 1000
2 cat values selected: app, card

grouped/v (variance)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 107 of 1000
value 51.2993 ± 144.778 (95% noise interval)

grouped/vk (variance)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 107 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │                                                                                       0 ± 400
cash │                                                                                       0 ± 400

grouped/q (quantiles)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 109 of 1000
ranks q0.25  q0.5  q0.75; ± the 95% bound on the rank error

14.17  20.8087  26.558  (rank ± 1)

grouped/qk (quantiles)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 113 of 1000
ranks q0.1  q0.5  q0.9; ± the 95% bound on the rank error

app  6.875  18.9922  34.0365  (rank ± 1)
card  16.2785  30.4419  38.6445  (rank ± 1)

grouped/n (count)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 113 of 1000
4 values of cat; the 4 largest, bar ∝ value, then value ± 95% noise interval

   card │██████████████████████████████████████████████████████████████████████████████████   20 ± 9
voucher │████████████████▍                                                                     4 ± 9
   cash │████▏                                                                                 1 ± 9
   none │(negative)                                                                           -4 ± 9

grouped/nsel (count)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 117 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   22 ± 4
 app │█████████████████████████████████████████████████████████████▉                          16 ± 4

grouped/s (sum)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 119 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │██████████████████████████████████████████████████████████████████████████   58.8168 ± 106.732

grouped/m (mean)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 121 of 1000
6 values of z; the 6 largest, bar ∝ value, then value ± 95% noise interval

5 │██████████████████████████████████████████████████████████████████████████████████        40 ± 40
8 │██████████████████████████████████████████████████████████████████████████████████        40 ± 40
3 │█████████▎                                                                           4.51739 ± 40
1 │                                                                                           0 ± 40
2 │                                                                                           0 ± 40
9 │                                                                                           0 ± 40

grouped/u (count_units)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 121 of 1000
value 21 ± 3 (95% noise interval)

grouped/uk (count_units)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 125 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   16 ± 4

grouped/sel (select_keys)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 127 of 1000
1 cat values selected: card

grouped/v (variance)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 128 of 1000
value 107.357 ± 157.68 (95% noise interval)

grouped/vk (variance)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 128 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

cash │██████████████████████████████████████████████████████████████████████████   234.792 ± 236.937
card │                                                                                       0 ± 400

grouped/q (quantiles)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 130 of 1000
ranks q0.25  q0.5  q0.75; ± the 95% bound on the rank error

18.3277  21.475  28.1162  (rank ± 1)

grouped/qk (quantiles)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 134 of 1000
ranks q0.1  q0.5  q0.9; ± the 95% bound on the rank error

card  5.28125  25.75  34.4425  (rank ± 1)

