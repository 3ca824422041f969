period/n (count)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 0.5 of 1.5
value 39 ± 18 (95% noise interval)

period/s (sum)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 1 of 1.5
value 228.707 ± 179.744 (95% noise interval)

period/n (count)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 0.5 of 1.5
value 47 ± 18 (95% noise interval)

period/s (sum)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 1 of 1.5
value 266.953 ± 179.744 (95% noise interval)

period/n (count)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 1.5 of 1.5
value 63 ± 18 (95% noise interval)

period/s (sum)  2023-11-14 22:15:00–22:16:00 UTC  budget_exhausted  ε spent 1.5 of 1.5
refused: the stream's budget is exhausted; nothing was released for this window

period/n (count)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 0.5 of 1.5
value 52 ± 18 (95% noise interval)

period/s (sum)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 1 of 1.5
value 244.913 ± 179.744 (95% noise interval)

period/n (count)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 1.5 of 1.5
value 45 ± 18 (95% noise interval)

period/s (sum)  2023-11-14 22:17:00–22:18:00 UTC  budget_exhausted  ε spent 1.5 of 1.5
refused: the stream's budget is exhausted; nothing was released for this window

period/n (count)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 0.5 of 1.5
value 53 ± 18 (95% noise interval)

period/s (sum)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 1 of 1.5
value 290.289 ± 179.744 (95% noise interval)

