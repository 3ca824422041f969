rr/rp (randomized_response)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 0.5 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │███████████████████████████████████████████████████████████████████████ 67.9%  22 ± 26.4378
app     │█████████████████████████████████▋                                      32.1%  12 ± 26.1946
cash    │                                                                         0.0%  -3 ± 25.8996
voucher │                                                                         0.0%  -3 ± 25.8996
local ε = 1.95 per report (randomized by producers); central noise as configured

rr/rl (randomized_response)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 1.27 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │█████████████████████████████████████████████████████████████████ 91.7%   42.6779 ± 26.8103
app     │                                                                   0.0%  0.400094 ± 25.9301
cash    │█████▉                                                             8.3%   10.1565 ± 26.1554
voucher │                                                                   0.0%  -14.2345 ± 25.9209
local ε = 2 per report (randomized by producers); central noise as configured

rr/rp (randomized_response)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 1.75 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │████████████████████████████████████████████████████████████████ 100.0%        61 ± 27.2488
app     │                                                                   0.0%   7.66667 ± 26.3813
cash    │                                                                   0.0%  -30.6667 ± 26.1946
voucher │                                                                   0.0%         6 ± 26.3408
local ε = 1.95 per report (randomized by producers); central noise as configured

rr/rl (randomized_response)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 2.1 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │█████████████████████████████████████████████████████████████████ 65.8%    31.765 ± 26.5977
app     │                                                                   0.0%  0.869647 ± 25.8899
cash    │                                                                   0.0%  -17.0171 ± 25.8697
voucher │█████████████████████████████████▊                                34.2%   20.3825 ± 26.3392
local ε = 2 per report (randomized by producers); central noise as configured

rr/rp (randomized_response)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 2.56 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │██████████████████████████████████▏                               34.3%   26.8333 ± 27.1094
app     │█████████████████████████████████████████████████████████████████ 65.3%    45.1667 ± 27.539
cash    │                                                                   0.0%  -19.8333 ± 26.4681
voucher │▍                                                                  0.4%   6.83333 ± 26.6329
local ε = 1.95 per report (randomized by producers); central noise as configured

rr/rl (randomized_response)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 2.83 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │█████████████████████████████████████████████████████████████████ 44.5%   17.4434 ± 26.2383
app     │████████████████████████████████████████████                      30.1%   12.5652 ± 26.1263
cash    │                                                                   0.0%  -6.94767 ± 25.8355
voucher │█████████████████████████████████████                             25.4%   10.9391 ± 26.0889
local ε = 2 per report (randomized by producers); central noise as configured

rr/rp (randomized_response)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 3.29 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │█████████████████████████████████████████████████████████████████ 53.1%        31 ± 27.1193
app     │█████████████████████████████████████████████████████████▌        46.9%   27.6667 ± 27.0405
cash    │                                                                   0.0%  -2.33333 ± 26.3772
voucher │                                                                   0.0%  -2.33333 ± 26.3772
local ε = 1.95 per report (randomized by producers); central noise as configured

rr/rl (randomized_response)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 3.51 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │█████████████████████████████████████████████████████████████████ 84.8%   28.1389 ± 26.3788
app     │███████████▋                                                      15.2%   8.62607 ± 25.9335
cash    │                                                                   0.0%  -9.26071 ± 25.7327
voucher │                                                                   0.0%  0.495718 ± 25.7443
local ε = 2 per report (randomized by producers); central noise as configured

rr/rp (randomized_response)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 3.96 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │██████████████████████████████████████████████████████████████████ 55.8%  34.6667 ± 27.1704
app     │███████████████████████████████████████████▎                       36.5%  24.6667 ± 26.9337
cash    │█████████▏                                                          7.7%  9.66667 ± 26.5747
voucher │                                                                    0.0%      -17 ± 26.3408
local ε = 1.95 per report (randomized by producers); central noise as configured

rr/rl (randomized_response)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 4.16 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │█████████████████████████████████████████                         35.3%   22.2869 ± 26.6989
app     │█████████████████████████████████████████████████████████████████ 56.0%    33.6694 ± 26.954
cash    │██████████▏                                                        8.7%   7.65224 ± 26.3672
voucher │                                                                   0.0%  -8.60847 ± 26.1922
local ε = 2 per report (randomized by producers); central noise as configured

rr/rp (randomized_response)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 4.6 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │█████████████████████████████████████████████████████████████████ 100.0%     59.5 ± 27.6164
app     │                                                                    0.0%  -7.16667 ± 26.359
cash    │                                                                    0.0%      -5.5 ± 26.359
voucher │                                                                    0.0%  6.16667 ± 26.5084
local ε = 1.95 per report (randomized by producers); central noise as configured

rr/rl (randomized_response)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 4.77 of 100
4 categories of cat; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors
card    │██████████                                                         11.7%  2.46955 ± 25.3933
app     │██████████████████████████████████████████████████████████████████ 76.7%  5.72169 ± 25.4531
cash    │                                                                    0.0%  -5.6608 ± 25.3347
voucher │██████████                                                         11.7%  2.46955 ± 25.3933
local ε = 2 per report (randomized by producers); central noise as configured

