basic/n (count)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 0.5 of 100
value 39 ± 18 (95% noise interval)

basic/s (sum)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 1 of 100
value 89.6806 ± 179.744 (95% noise interval)

basic/m (mean)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 2 of 100
value 18.345 ± 12.2896 (95% noise interval)

basic/h (histogram)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 2.5 of 100
5 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0,  2) │█████████████████████████████████████████████████████████████████████████████████ 61.7%  37
[2,  4) │███████████                                                                        8.3%   5
[4,  6) │██████▋                                                                            5.0%   3
[6,  8) │                                                                                   0.0%  -4
[8, 10] │████████████████████████████████▉                                                 25.0%  15

basic/n (count)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 3 of 100
value 59 ± 18 (95% noise interval)

basic/s (sum)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 3.5 of 100
value 103.982 ± 179.744 (95% noise interval)

basic/m (mean)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 4.5 of 100
value 22.9496 ± 15.3924 (95% noise interval)

basic/h (histogram)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 5 of 100
5 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0,  2) │████████████████████████████████████████████████████████████████████████████████ 65.9%   27
[2,  4) │███████████████████████▊                                                         19.5%    8
[4,  6) │                                                                                  0.0%  -17
[6,  8) │█████████████████▊                                                               14.6%    6
[8, 10] │                                                                                  0.0%    0

basic/n (count)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 5.5 of 100
value 61 ± 18 (95% noise interval)

basic/s (sum)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 6 of 100
value 261.048 ± 179.744 (95% noise interval)

basic/m (mean)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 6.99 of 100
value 20.249 ± 9.33702 (95% noise interval)

basic/h (histogram)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 7.49 of 100
5 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0,  2) │█████████████████████████████████████████████████████████████████████████████████ 47.6%  20
[2,  4) │████████████████████████████████████▌                                             21.4%   9
[4,  6) │████████▏                                                                          4.8%   2
[6,  8) │                                                                                   0.0%  -6
[8, 10] │████████████████████████████████████████████▌                                     26.2%  11

basic/n (count)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 7.98 of 100
value 55 ± 18 (95% noise interval)

basic/s (sum)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 8.47 of 100
value 209.634 ± 179.744 (95% noise interval)

basic/m (mean)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 9.41 of 100
value 20.3237 ± 9.18019 (95% noise interval)

basic/h (histogram)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 9.86 of 100
5 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0,  2) │█████████████████████████████████████████████████████████████████████████████████ 45.7%  16
[2,  4) │██████████▏                                                                        5.7%   2
[4,  6) │█████▏                                                                             2.9%   1
[6,  8) │█████████████████████████████████████████████▋                                    25.7%   9
[8, 10] │███████████████████████████████████▌                                              20.0%   7

basic/n (count)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 10.3 of 100
value 41 ± 18 (95% noise interval)

basic/s (sum)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 10.7 of 100
value 378.898 ± 179.744 (95% noise interval)

basic/m (mean)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 11.5 of 100
value 20.034 ± 7.3903 (95% noise interval)

basic/h (histogram)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 11.9 of 100
5 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0,  2) │█████████████████████████████████████████████████▏                                18.5%  17
[2,  4) │██████████████████████████████████████████████████████████████████████████████▏   29.3%  27
[4,  6) │██████████████████████████████████████████████▎                                   17.4%  16
[6,  8) │███████████▋                                                                       4.3%   4
[8, 10] │█████████████████████████████████████████████████████████████████████████████████ 30.4%  28

basic/n (count)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 12.2 of 100
value 29 ± 18 (95% noise interval)

basic/s (sum)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 12.6 of 100
value 156.228 ± 179.744 (95% noise interval)

basic/m (mean)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 13.3 of 100
value 15.9894 ± 10.8456 (95% noise interval)

basic/h (histogram)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 13.6 of 100
5 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0,  2) │███████████████████████████████████████████████████▌                              28.3%  28
[2,  4) │█████████████████████████████████████████████████████████████████████████████████ 44.4%  44
[4,  6) │██████████████████▍                                                               10.1%  10
[6,  8) │█████▌                                                                             3.0%   3
[8, 10] │█████████████████████████▊                                                        14.1%  14

