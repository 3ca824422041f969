hist/h1 (histogram)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 0.5 of 100
8 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  1.25) │████████████████████████████████████████████████████████████████████████▋   25.6%  31
[1.25,  2.50) │                                                                             0.0%   0
[2.50,  3.75) │███████████████████████████████████████████████████████████████████████████ 26.4%  32
[3.75,  5.00) │██████████████████████████████████████████████▉                             16.5%  20
[5.00,  6.25) │███████████████████████▌                                                     8.3%  10
[6.25,  7.50) │████▊                                                                        1.7%   2
[7.50,  8.75) │█████████████████████████████████████████████████▎                          17.4%  21
[8.75, 10.00] │███████████▊                                                                 4.1%   5
5 synthetic samples (drawn from this release; not plotted)

hist/h2 (histogram)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 1 of 100
3 × 4 bins over x × y on [0, 10] × [0, 40]; shade ∝ probability
0.00 │░░░░████▒▒▒▒░░░░
3.33 │    ▒▒▒▒░░░░    
6.67 │        ░░░░░░░░
     └────────────────
      0             40
█ = largest cell, 43.9%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: x, columns: y
4 synthetic samples (drawn from this release; not plotted)

hist/h3 (histogram)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 1.75 of 100
3 × 3 × 3 bins over x × y × z on [0, 10] × [0, 40] × [0, 10]: one-field marginals, probabilities and noisy counts summed over the other fields

marginal of x (summed over y, z)
3 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  3.33) │██████████████████████████████████████████████████████████████████████████ 42.9%   16
[3.33,  6.67) │████████████████████████████████████████████████████████████▌              35.0%   12
[6.67, 10.00] │██████████████████████████████████████▎                                    22.1%  -58

marginal of y (summed over x, z)
3 bins on [0, 40]; bar ∝ probability, then probability and noisy count
[ 0.0, 13.3) │████████████████████████████████████████████████████████████████████▊       35.5%   25
[13.3, 26.7) │██████████████████████████████████████████████████                          25.8%  -21
[26.7, 40.0] │███████████████████████████████████████████████████████████████████████████ 38.7%  -34

marginal of z (summed over x, y)
3 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  3.33) │█████████████████████████████████████████████████████████████████████████ 46.5%    34
[3.33,  6.67) │███████████████████████████████████████████████████████████████▋          40.6%    46
[6.67, 10.00] │████████████████████▎                                                     12.9%  -110

hist/h2auto (histogram)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 2.1 of 100
5 × 5 bins over y × z on [0, 40] × [0, 10]; shade ∝ probability
 0 │░░░░    ░░░░░░░░░░░░
 8 │▓▓▓▓░░░░▓▓▓▓    ████
16 │░░░░░░░░▓▓▓▓▓▓▓▓▓▓▓▓
24 │    ▒▒▒▒████        
32 │    ▓▓▓▓▒▒▒▒░░░░▓▓▓▓
   └────────────────────
    0                 10
█ = largest cell, 11.8%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: y, columns: z
3 synthetic samples (drawn from this release; not plotted)

hist/h1 (histogram)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 2.56 of 100
8 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  1.25) │████████████████████████████████████████████████████████████████████▏       17.9%  10
[1.25,  2.50) │███████████████████████████████████████████████████████████████████████████ 19.6%  11
[2.50,  3.75) │████████████████████████████████████████▉                                   10.7%   6
[3.75,  5.00) │███████████████████████████████████████████████▊                            12.5%   7
[5.00,  6.25) │███████████████████████████▎                                                 7.1%   4
[6.25,  7.50) │██████████████████████████████████▏                                          8.9%   5
[7.50,  8.75) │█████████████████████████████████████████████████████████████▍              16.1%   9
[8.75, 10.00] │███████████████████████████▎                                                 7.1%   4
5 synthetic samples (drawn from this release; not plotted)

hist/h2 (histogram)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 3.03 of 100
3 × 4 bins over x × y on [0, 10] × [0, 40]; shade ∝ probability
0.00 │░░░░████▓▓▓▓    
3.33 │████████    ████
6.67 │░░░░▓▓▓▓▒▒▒▒▒▒▒▒
     └────────────────
      0             40
█ = largest cell, 17.1%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: x, columns: y
4 synthetic samples (drawn from this release; not plotted)

hist/h3 (histogram)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 3.29 of 100
3 × 3 × 3 bins over x × y × z on [0, 10] × [0, 40] × [0, 10]: one-field marginals, probabilities and noisy counts summed over the other fields

marginal of x (summed over y, z)
3 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  3.33) │███████████████████████████████████████████████████████████████████████████ 39.8%  96
[3.33,  6.67) │████████████████████████████████████████████████████████████▊               32.3%  41
[6.67, 10.00] │████████████████████████████████████████████████████▌                       27.9%  30

marginal of y (summed over x, z)
3 bins on [0, 40]; bar ∝ probability, then probability and noisy count
[ 0.0, 13.3) │█████████████████████████████████████████████████████████████████████████▌   34.7%  49
[13.3, 26.7) │████████████████████████████████████████████████████████████████████████████ 35.9%  77
[26.7, 40.0] │██████████████████████████████████████████████████████████████▌              29.5%  41

marginal of z (summed over x, y)
3 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  3.33) │███████████████████████████▍                                               19.1%    2
[3.33,  6.67) │██████████████████████████████████████████████████████████████████████████ 51.8%  115
[6.67, 10.00] │█████████████████████████████████████████▌                                 29.1%   50

hist/h2auto (histogram)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 3.51 of 100
5 × 5 bins over y × z on [0, 40] × [0, 10]; shade ∝ probability
 0 │            ▒▒▒▒▒▒▒▒
 8 │    ▒▒▒▒▒▒▒▒░░░░▓▓▓▓
16 │        ░░░░    ▒▒▒▒
24 │░░░░    ▒▒▒▒    ▓▓▓▓
32 │    ████░░░░░░░░    
   └────────────────────
    0                 10
█ = largest cell, 19.2%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: y, columns: z
3 synthetic samples (drawn from this release; not plotted)

hist/h1 (histogram)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 3.96 of 100
8 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  1.25) │███████████████████████████████████████████████████████████████████▋       24.7%   21
[1.25,  2.50) │                                                                            0.0%  -22
[2.50,  3.75) │███▎                                                                        1.2%    1
[3.75,  5.00) │█████████████████████████████████████████████████████████████▏             22.4%   19
[5.00,  6.25) │██████████████████████████████████████████████████████████████████████████ 27.1%   23
[6.25,  7.50) │█████████████████████████████                                              10.6%    9
[7.50,  8.75) │                                                                            0.0%  -11
[8.75, 10.00] │██████████████████████████████████████▋                                    14.1%   12
5 synthetic samples (drawn from this release; not plotted)

hist/h2 (histogram)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 4.41 of 100
3 × 4 bins over x × y on [0, 10] × [0, 40]; shade ∝ probability
0.00 │▒▒▒▒████    ▒▒▒▒
3.33 │▒▒▒▒    ░░░░    
6.67 │    ▒▒▒▒████    
     └────────────────
      0             40
█ = largest cell, 29.0%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: x, columns: y
4 synthetic samples (drawn from this release; not plotted)

hist/h3 (histogram)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 4.6 of 100
3 × 3 × 3 bins over x × y × z on [0, 10] × [0, 40] × [0, 10]: one-field marginals, probabilities and noisy counts summed over the other fields

marginal of x (summed over y, z)
3 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  3.33) │████████████████████████████████████████████████████████████████████▊      41.4%  -80
[3.33,  6.67) │███████████████████████▌                                                   14.1%  -35
[6.67, 10.00] │██████████████████████████████████████████████████████████████████████████ 44.5%   18

marginal of y (summed over x, z)
3 bins on [0, 40]; bar ∝ probability, then probability and noisy count
[ 0.0, 13.3) │███████████████████████████████████████████▋                                22.5%  -76
[13.3, 26.7) │███████████████████████████████████████████████████████████████████████████ 38.7%  -23
[26.7, 40.0] │███████████████████████████████████████████████████████████████████████████ 38.7%    2

marginal of z (summed over x, y)
3 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  3.33) │██████████████████████████████████████████████████████████████████████████ 69.6%   78
[3.33,  6.67) │██████████████████████▊                                                    21.5%  -91
[6.67, 10.00] │█████████▌                                                                  8.9%  -84

hist/h2auto (histogram)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 4.77 of 100
5 × 5 bins over y × z on [0, 40] × [0, 10]; shade ∝ probability
 0 │        ▒▒▒▒▒▒▒▒    
 8 │▒▒▒▒▓▓▓▓░░░░░░░░████
16 │░░░░▒▒▒▒▒▒▒▒░░░░    
24 │    ░░░░            
32 │    ▒▒▒▒            
   └────────────────────
    0                 10
█ = largest cell, 24.3%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: y, columns: z
3 synthetic samples (drawn from this release; not plotted)

hist/h1 (histogram)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 5.21 of 100
8 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  1.25) │████████████████████████████████████████████████▏                          24.5%   13
[1.25,  2.50) │██████████████████████████████████████████████████████████████████████████ 37.7%   20
[2.50,  3.75) │███████████▏                                                                5.7%    3
[3.75,  5.00) │                                                                            0.0%  -10
[5.00,  6.25) │██████████████████████████████████████████████████████████████▉            32.1%   17
[6.25,  7.50) │                                                                            0.0%   -4
[7.50,  8.75) │                                                                            0.0%  -17
[8.75, 10.00] │                                                                            0.0%    0
5 synthetic samples (drawn from this release; not plotted)

hist/h2 (histogram)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 5.64 of 100
3 × 4 bins over x × y on [0, 10] × [0, 40]; shade ∝ probability
0.00 │    ▒▒▒▒▓▓▓▓░░░░
3.33 │        ████▒▒▒▒
6.67 │░░░░░░░░░░░░    
     └────────────────
      0             40
█ = largest cell, 36.1%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: x, columns: y
4 synthetic samples (drawn from this release; not plotted)

hist/h3 (histogram)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 5.8 of 100
3 × 3 × 3 bins over x × y × z on [0, 10] × [0, 40] × [0, 10]: one-field marginals, probabilities and noisy counts summed over the other fields

marginal of x (summed over y, z)
3 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  3.33) │█████████████████████████████████████████████████████████████████▎         33.4%   75
[3.33,  6.67) │████████████████████████████████████████████████████████▏                  28.7%   81
[6.67, 10.00] │██████████████████████████████████████████████████████████████████████████ 37.9%  134

marginal of y (summed over x, z)
3 bins on [0, 40]; bar ∝ probability, then probability and noisy count
[ 0.0, 13.3) │████████████████████████████████████████████████████▌                       32.9%   83
[13.3, 26.7) │███████████████████████████████████████████████████████████████████████████ 47.1%  189
[26.7, 40.0] │███████████████████████████████▉                                            20.0%   18

marginal of z (summed over x, y)
3 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  3.33) │██████████████████████████████████████████████████████████████████████████ 47.1%  181
[3.33,  6.67) │███████████████████████████████████████████████████████▉                   35.5%  117
[6.67, 10.00] │███████████████████████████▍                                               17.4%   -8

hist/h2auto (histogram)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 5.94 of 100
5 × 5 bins over y × z on [0, 40] × [0, 10]; shade ∝ probability
 0 │    ▓▓▓▓▒▒▒▒▒▒▒▒░░░░
 8 │    ████░░░░    ▒▒▒▒
16 │████    ░░░░▒▒▒▒░░░░
24 │░░░░    ░░░░████▒▒▒▒
32 │▒▒▒▒▒▒▒▒░░░░░░░░    
   └────────────────────
    0                 10
█ = largest cell, 13.9%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: y, columns: z
3 synthetic samples (drawn from this release; not plotted)

hist/h1 (histogram)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 6.36 of 100
8 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  1.25) │                                                                            0.0%  -15
[1.25,  2.50) │███████████████████████████████████████████████████████████████            23.7%   23
[2.50,  3.75) │██████████████████████████████████████████████████████████████████████████ 27.8%   27
[3.75,  5.00) │                                                                            0.0%  -14
[5.00,  6.25) │██████████████████████████████████████▍                                    14.4%   14
[6.25,  7.50) │███████████████████▏                                                        7.2%    7
[7.50,  8.75) │█████████████████████████████████████████████████████████▌                 21.6%   21
[8.75, 10.00] │█████████████▊                                                              5.2%    5
5 synthetic samples (drawn from this release; not plotted)

hist/h2 (histogram)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 6.78 of 100
3 × 4 bins over x × y on [0, 10] × [0, 40]; shade ∝ probability
0.00 │████░░░░░░░░▒▒▒▒
3.33 │    ▒▒▒▒░░░░▒▒▒▒
6.67 │    ▓▓▓▓        
     └────────────────
      0             40
█ = largest cell, 34.5%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: x, columns: y
4 synthetic samples (drawn from this release; not plotted)

hist/h3 (histogram)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 6.91 of 100
3 × 3 × 3 bins over x × y × z on [0, 10] × [0, 40] × [0, 10]: one-field marginals, probabilities and noisy counts summed over the other fields

marginal of x (summed over y, z)
3 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  3.33) │████████████████████████████████████████████████▉                          27.2%   34
[3.33,  6.67) │██████████████████████████████████████████████████████████████████████████ 41.3%  123
[6.67, 10.00] │████████████████████████████████████████████████████████▌                  31.5%  104

marginal of y (summed over x, z)
3 bins on [0, 40]; bar ∝ probability, then probability and noisy count
[ 0.0, 13.3) │███████████████████████████████████████████████████████████████████████████ 48.1%  154
[13.3, 26.7) │████████████████████████████████████████████████████████████▎               38.7%  135
[26.7, 40.0] │████████████████████▌                                                       13.2%  -28

marginal of z (summed over x, y)
3 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  3.33) │███████████████████████████████████████▊                                   24.9%   69
[3.33,  6.67) │█████████████████████████████████████████████▋                             28.7%   30
[6.67, 10.00] │██████████████████████████████████████████████████████████████████████████ 46.4%  162

hist/h2auto (histogram)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 7.03 of 100
5 × 5 bins over y × z on [0, 40] × [0, 10]; shade ∝ probability
 0 │░░░░████    ▒▒▒▒    
 8 │░░░░▒▒▒▒            
16 │        ████▓▓▓▓▓▓▓▓
24 │░░░░                
32 │▒▒▒▒    ░░░░████    
   └────────────────────
    0                 10
█ = largest cell, 17.3%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: y, columns: z
3 synthetic samples (drawn from this release; not plotted)

hist/h1 (histogram)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 7.44 of 100
8 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  1.25) │███████████▏                                                                7.3%    3
[1.25,  2.50) │█████████████████████████▉                                                 17.1%    7
[2.50,  3.75) │                                                                            0.0%   -1
[3.75,  5.00) │█████████████████████████████████████                                      24.4%   10
[5.00,  6.25) │██████████████████████████████████████████████████████████████████████████ 48.8%   20
[6.25,  7.50) │                                                                            0.0%  -17
[7.50,  8.75) │                                                                            0.0%   -4
[8.75, 10.00] │███▊                                                                        2.4%    1
5 synthetic samples (drawn from this release; not plotted)

hist/h2 (histogram)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 7.84 of 100
3 × 4 bins over x × y on [0, 10] × [0, 40]; shade ∝ probability
0.00 │    ▒▒▒▒        
3.33 │    ▓▓▓▓        
6.67 │░░░░░░░░████    
     └────────────────
      0             40
█ = largest cell, 42.6%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: x, columns: y
4 synthetic samples (drawn from this release; not plotted)

hist/h3 (histogram)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 7.95 of 100
3 × 3 × 3 bins over x × y × z on [0, 10] × [0, 40] × [0, 10]: one-field marginals, probabilities and noisy counts summed over the other fields

marginal of x (summed over y, z)
3 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  3.33) │██████████████████████████████████████▉                                    28.0%  -47
[3.33,  6.67) │█████████████████████████▉                                                 18.7%  -71
[6.67, 10.00] │██████████████████████████████████████████████████████████████████████████ 53.3%   47

marginal of y (summed over x, z)
3 bins on [0, 40]; bar ∝ probability, then probability and noisy count
[ 0.0, 13.3) │████████████████████████████████▉                                           21.3%  -55
[13.3, 26.7) │███████████████████████████████████████████████████████████████████████████ 48.7%   20
[26.7, 40.0] │██████████████████████████████████████████████▎                             30.0%  -36

marginal of z (summed over x, y)
3 bins on [0, 10]; bar ∝ probability, then probability and noisy count
[0.00,  3.33) │██████████████████████████████████████████████████████████████████████████ 40.7%  -28
[3.33,  6.67) │██████████████████████████████████████████████████████████████████▊        36.7%  -35
[6.67, 10.00] │█████████████████████████████████████████▎                                 22.7%   -8

hist/h2auto (histogram)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 8.06 of 100
5 × 5 bins over y × z on [0, 40] × [0, 10]; shade ∝ probability
 0 │████        ████▒▒▒▒
 8 │        ░░░░░░░░    
16 │        ████        
24 │    ▓▓▓▓    ████████
32 │▒▒▒▒            ░░░░
   └────────────────────
    0                 10
█ = largest cell, 16.3%; ░▒▓█ up to ¼ ½ ¾ 1 of it; rows: y, columns: z
3 synthetic samples (drawn from this release; not plotted)

