budget/n (count)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 0.5 of 2.2
value 39 ± 18 (95% noise interval)

budget/h (histogram)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 1.1 of 2.2
4 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.0,  2.5) │█████████████████████████████████████████████████████████████████████████████ 59.1%  26
[2.5,  5.0) │███                                                                            2.3%   1
[5.0,  7.5) │███████████▉                                                                   9.1%   4
[7.5, 10.0] │██████████████████████████████████████▌                                       29.5%  13

budget/n (count)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 1.6 of 2.2
value 55 ± 18 (95% noise interval)

budget/h (histogram)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 2.2 of 2.2
4 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.0,  2.5) │█████████████████████████████████████████████████████████████████████████████ 40.4%  19
[2.5,  5.0) │████████████████████████████████████████████████▋                             25.5%  12
[5.0,  7.5) │████████▏                                                                      4.3%   2
[7.5, 10.0] │████████████████████████████████████████████████████████▊                     29.8%  14

budget/n (count)  2023-11-14 22:15:00–22:16:00 UTC  budget_exhausted  ε spent 2.2 of 2.2
refused: the stream's budget is exhausted; nothing was released for this window

budget/h (histogram)  2023-11-14 22:15:00–22:16:00 UTC  budget_exhausted  ε spent 2.2 of 2.2
refused: the stream's budget is exhausted; nothing was released for this window

budget/n (count)  2023-11-14 22:16:00–22:17:00 UTC  budget_exhausted  ε spent 2.2 of 2.2
refused: the stream's budget is exhausted; nothing was released for this window

budget/h (histogram)  2023-11-14 22:16:00–22:17:00 UTC  budget_exhausted  ε spent 2.2 of 2.2
refused: the stream's budget is exhausted; nothing was released for this window

budget/n (count)  2023-11-14 22:17:00–22:18:00 UTC  budget_exhausted  ε spent 2.2 of 2.2
refused: the stream's budget is exhausted; nothing was released for this window

budget/h (histogram)  2023-11-14 22:17:00–22:18:00 UTC  budget_exhausted  ε spent 2.2 of 2.2
refused: the stream's budget is exhausted; nothing was released for this window

budget/n (count)  2023-11-14 22:18:00–22:19:00 UTC  budget_exhausted  ε spent 2.2 of 2.2
refused: the stream's budget is exhausted; nothing was released for this window

budget/h (histogram)  2023-11-14 22:18:00–22:19:00 UTC  budget_exhausted  ε spent 2.2 of 2.2
refused: the stream's budget is exhausted; nothing was released for this window

