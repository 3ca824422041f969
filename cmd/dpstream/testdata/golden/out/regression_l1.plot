reg1/ssp (regression)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 0.799 of 200
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.207408  ± 3.07672
b             -0.0714964  ± 0.122376
(intercept)      6.78223
method ssp
ridge λ = 0 (on the scaled problem)

reg1/adassp (regression)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 1.16 of 200
1 feature; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.833846  ± 1.27969
(intercept)      4.75253
method adassp
ridge λ = 40.5538 (on the scaled problem)

reg1/ops (regression)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 1.74 of 200
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a               0.479086  ± 6.12673
c               -3.35393  ± 6.1772
(intercept)      1.32539
method ops
ridge λ = 189.019 (on the scaled problem)

reg1/adaops (regression)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 2.31 of 200
1 feature; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.534663  ± 0.706878
(intercept)      3.53466
method adaops
ridge λ = 168.367 (on the scaled problem)

reg1/pcls (regression)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 3.25 of 200
3 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.496785  ± 1.11077
b                      0  not selected
c                      0  not selected
(intercept)      3.97418
method pcls
ridge λ = 33.5281 (on the scaled problem)

reg1/ssp (regression)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 3.43 of 200
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a                7.54507  ± 90.9211
b               0.357316  ± 4.09615
(intercept)     -22.4109
method ssp
ridge λ = 0 (on the scaled problem)

reg1/adassp (regression)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 3.6 of 200
1 feature; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a               0.783234  ± 1.44861
(intercept)      3.78192
method adassp
ridge λ = 20.5175 (on the scaled problem)

reg1/ops (regression)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 4.15 of 200
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              0.0551009  ± 3.58917
c                1.60926  ± 3.68299
(intercept)      7.30178
method ops
ridge λ = 189.019 (on the scaled problem)

reg1/adaops (regression)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 4.69 of 200
1 feature; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a             -0.0967838  ± 0.643996
(intercept)      3.09678
method adaops
ridge λ = 168.367 (on the scaled problem)

reg1/pcls (regression)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 5.31 of 200
3 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.044915  ± 0.619281
b             -0.0142163  ± 0.0483875
c                      0  not selected
(intercept)      3.58442
method pcls
ridge λ = 64.6277 (on the scaled problem)

reg1/ssp (regression)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 5.45 of 200
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.498339  ± 4.74268
b             -0.0413798  ± 0.20613
(intercept)      5.56733
method ssp
ridge λ = 0 (on the scaled problem)

reg1/adassp (regression)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 5.59 of 200
1 feature; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a               0.832518  ± 1.24546
(intercept)      0.89408
method adassp
ridge λ = 40.5538 (on the scaled problem)

reg1/ops (regression)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 6.12 of 200
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a               0.396862  ± 2.82561
c               0.193768  ± 2.8811
(intercept)      2.15563
method ops
ridge λ = 189.019 (on the scaled problem)

reg1/adaops (regression)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 6.65 of 200
1 feature; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a               0.287334  ± 0.623687
(intercept)      2.71267
method adaops
ridge λ = 168.367 (on the scaled problem)

reg1/pcls (regression)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 7.17 of 200
3 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a               0.200075  ± 0.739654
b              0.0233444  ± 0.0423477
c                      0  not selected
(intercept)      1.88344
method pcls
ridge λ = 64.6277 (on the scaled problem)

reg1/ssp (regression)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 7.29 of 200
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.364336  ± 6.85977
b              0.0851284  ± 0.186406
(intercept)    -0.892082
method ssp
ridge λ = 0 (on the scaled problem)

reg1/adassp (regression)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 7.41 of 200
1 feature; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              0.0923674  ± 2.9779
(intercept)      3.65217
method adassp
ridge λ = 40.5538 (on the scaled problem)

reg1/ops (regression)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 7.94 of 200
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a                 2.0511  ± 4.00416
c               -2.64321  ± 4.03427
(intercept)      12.9563
method ops
ridge λ = 189.019 (on the scaled problem)

reg1/adaops (regression)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 8.47 of 200
1 feature; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.222465  ± 0.686153
(intercept)      3.22246
method adaops
ridge λ = 168.367 (on the scaled problem)

reg1/pcls (regression)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 8.92 of 200
3 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.452267  ± 0.873336
b                      0  not selected
c                      0  not selected
(intercept)      4.10149
method pcls
ridge λ = 34.6473 (on the scaled problem)

