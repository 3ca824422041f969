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

grouped/n (count)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 17.8 of 1000
4 values of cat; the 4 largest, bar ∝ value, then value ± 95% noise interval

   card │██████████████████████████████████████████████████████████████████████████████████   22 ± 9
   none │███████▌                                                                              2 ± 9
voucher │███████▌                                                                              2 ± 9
   cash │███▊                                                                                  1 ± 9

grouped/nsel (count)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 21.8 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   32 ± 4
 app │██████████████████████████▋                                                             10 ± 4

grouped/s (sum)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 24.3 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │██████████████████████████████████████████████████████████████████████████   202.037 ± 106.732

grouped/m (mean)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 26 of 1000
6 values of z; the 6 largest, bar ∝ value, then value ± 95% noise interval

3 │█████████████████████████████████████████████████████████████████████████████             40 ± 40
9 │███████████████████████████████████████████████████████████████████████▌             37.1243 ± 40
8 │███████████████████████████████████████████████████████████████████████▎        37.0437 ± 37.2681
1 │██████████████████████████████████████████▌                                          22.0485 ± 40
2 │███████████████████████▍                                                             12.1649 ± 40
5 │                                                                                           0 ± 40

grouped/u (count_units)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 26.9 of 1000
value 27 ± 3 (95% noise interval)

grouped/uk (count_units)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 30.8 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   21 ± 4

grouped/sel (select_keys)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 32.8 of 1000
2 cat values selected: app, card

grouped/n (count)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 33.6 of 1000
4 values of cat; the 4 largest, bar ∝ value, then value ± 95% noise interval

   card │██████████████████████████████████████████████████████████████████████████████████   26 ± 9
   cash │██████▎                                                                               2 ± 9
voucher │███▏                                                                                  1 ± 9
   none │(negative)                                                                           -6 ± 9

grouped/nsel (count)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 37.6 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   24 ± 4
 app │█████████████████████████████████████████████████████▏                                  15 ± 4

grouped/s (sum)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 40 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │██████████████████████████████████████████████████████████████████████████   147.401 ± 106.732

grouped/m (mean)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 41.5 of 1000
6 values of z; the 6 largest, bar ∝ value, then value ± 95% noise interval

9 │██████████████████████████████████████████████████████████████████████████████████        40 ± 40
8 │█████████████████████████████████████████████████████████████████████████████▊       37.9409 ± 40
3 │█████████████████████████████████████████▋                                           20.3133 ± 40
1 │███████████████████████████                                                          13.1898 ± 40
2 │█████████▌                                                                           4.62589 ± 40
5 │                                                                                           0 ± 40

grouped/u (count_units)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 42.3 of 1000
value 23 ± 3 (95% noise interval)

grouped/uk (count_units)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 46.2 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   16 ± 4
 app │███████████████████████████████████████████████████████████████▊                        12 ± 4

grouped/sel (select_keys)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 48.2 of 1000
2 cat values selected: app, card

grouped/n (count)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 49 of 1000
4 values of cat; the 4 largest, bar ∝ value, then value ± 95% noise interval

   card │██████████████████████████████████████████████████████████████████████████████████   24 ± 9
voucher │████████████████████▌                                                                 6 ± 9
   none │██████▉                                                                               2 ± 9
   cash │                                                                                      0 ± 9

grouped/nsel (count)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 52.9 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   26 ± 4
 app │███████████████████████████████████████████████████████▋                                17 ± 4

grouped/s (sum)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 55.2 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │██████████████████████████████████████████████████████████████████████████   123.335 ± 106.732
 app │███████████████████████████▌                                                 45.8731 ± 106.732

grouped/m (mean)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 56.7 of 1000
6 values of z; the 6 largest, bar ∝ value, then value ± 95% noise interval

1 │██████████████████████████████████████████████████████████████████████████████████        40 ± 40
2 │██████████████████████████████████████████████████████████████████████████████████        40 ± 40
8 │██████████████████████████████████████████████████████████████████████████████████        40 ± 40
9 │██████████████████████████████████████████████████████████████████████████████████        40 ± 40
3 │█████████████████████████████████████████████████████████████▍                       29.9284 ± 40
5 │██████████████████████████████████████████████████████████                           28.3021 ± 40

grouped/u (count_units)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 57.5 of 1000
value 28 ± 3 (95% noise interval)

grouped/uk (count_units)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 61.3 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   17 ± 4

grouped/sel (select_keys)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 63.4 of 1000
2 cat values selected: app, card

grouped/n (count)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 64.1 of 1000
4 values of cat; the 4 largest, bar ∝ value, then value ± 95% noise interval

   card │██████████████████████████████████████████████████████████████████████████████████   28 ± 9
   none │(negative)                                                                           -4 ± 9
   cash │(negative)                                                                           -7 ± 9
voucher │(negative)                                                                           -9 ± 9

grouped/nsel (count)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 68 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   25 ± 4
 app │███████████████████████████████████████████████████                                     15 ± 4

grouped/s (sum)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 70.3 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │██████████████████████████████████████████████████████████████████████████   110.176 ± 106.732

grouped/m (mean)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 71.7 of 1000
6 values of z; the 6 largest, bar ∝ value, then value ± 95% noise interval

2 │██████████████████████████████████████████████████████████████████████████████████        40 ± 40
8 │██████████████████████████████████████████████████████████████████████████████████        40 ± 40
9 │██████████████████████████████████████████████████████████████████████████████████        40 ± 40
5 │█████████████████████████████████████████▊                                           20.3705 ± 40
1 │                                                                                           0 ± 40
3 │                                                                                           0 ± 40

grouped/u (count_units)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 72.4 of 1000
value 27 ± 3 (95% noise interval)

grouped/uk (count_units)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 76.2 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   19 ± 4
 app │███████████████████████████████████████████████████████████████████████▋                16 ± 4

grouped/sel (select_keys)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 78.3 of 1000
2 cat values selected: app, card

grouped/n (count)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 79 of 1000
4 values of cat; the 4 largest, bar ∝ value, then value ± 95% noise interval

   card │██████████████████████████████████████████████████████████████████████████████████   15 ± 9
   cash │████████████████████████████████▊                                                     6 ± 9
voucher │(negative)                                                                           -2 ± 9
   none │(negative)                                                                           -3 ± 9

grouped/nsel (count)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 82.8 of 1000
2 values of cat; the 2 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   22 ± 4
 app │██████████████████████████████████████████████▍                                         12 ± 4

grouped/s (sum)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 85.1 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │██████████████████████████████████████████████████████████████████████████   111.778 ± 106.732

grouped/m (mean)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 86.5 of 1000
6 values of z; the 6 largest, bar ∝ value, then value ± 95% noise interval

8 │██████████████████████████████████████████████████████████████████████████████████        40 ± 40
9 │██████████████████████████████████████████████████████████████████████████████████        40 ± 40
1 │████████████████████████████████████████████████▍                                    23.5722 ± 40
2 │████████████████████████████████                                                     15.5868 ± 40
5 │██████████████▉                                                                      7.26893 ± 40
3 │                                                                                           0 ± 40

grouped/u (count_units)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 87.2 of 1000
value 20 ± 3 (95% noise interval)

grouped/uk (count_units)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 91 of 1000
1 values of cat; the 1 largest, bar ∝ value, then value ± 95% noise interval

card │█████████████████████████████████████████████████████████████████████████████████████   17 ± 4

grouped/sel (select_keys)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 93 of 1000
1 cat values selected: card

