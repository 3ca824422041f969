reg/ssp (regression)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 0.799 of 100
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a               -1.53839  ± 4.2202
b             -0.0155695  ± 0.154446
(intercept)      9.36907
method ssp
ridge λ = 0.5 (on the scaled problem)

reg/adassp (regression)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 1.16 of 100
3 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a               0.163952  ± 0.649478
b             0.00566357  ± 0.0183073
c             -0.0287036  ± 0.648355
(intercept)       2.8803
method adassp
ridge λ = 415.743 (on the scaled problem)

reg/ops (regression)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 1.74 of 100
1 feature; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a               0.484752  ± 4.17476
(intercept)      1.49064
method ops
ridge λ = 407.741 (on the scaled problem)

reg/adaops (regression)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 2.31 of 100
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.131727  ± 0.318344
c               0.241665  ± 0.319142
(intercept)      2.69228
method adaops
ridge λ = 1647.16 (on the scaled problem)

reg/pcls (regression)  2023-11-14 22:13:00–22:14:00 UTC  ok  ε spent 3.58 of 100
3 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.304727  ± 0.944249
b                      0  not selected
c                      0  not selected
(intercept)      2.54747
method pcls
ridge λ = 142.702 (on the scaled problem)

reg/ssp (regression)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 3.82 of 100
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a               -2.15684  ± 14.3834
b             -0.0910865  ± 0.436419
(intercept)      17.5679
method ssp
ridge λ = 0.5 (on the scaled problem)

reg/adassp (regression)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 4.03 of 100
3 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a               0.346058  ± 0.779495
b              0.0201258  ± 0.046793
c                0.35748  ± 0.756737
(intercept)     0.526084
method adassp
ridge λ = 415.743 (on the scaled problem)

reg/ops (regression)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 4.58 of 100
1 feature; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a               0.399553  ± 3.01363
(intercept)      3.11045
method ops
ridge λ = 407.741 (on the scaled problem)

reg/adaops (regression)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 5.13 of 100
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.489739  ± 0.462283
c              -0.200262  ± 0.464152
(intercept)      3.13111
method adaops
ridge λ = 1647.16 (on the scaled problem)

reg/pcls (regression)  2023-11-14 22:14:00–22:15:00 UTC  ok  ε spent 6.11 of 100
3 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a             -0.0576045  ± 1.77622
b                      0  not selected
c                      0  not selected
(intercept)      3.21637
method pcls
ridge λ = 142.702 (on the scaled problem)

reg/ssp (regression)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 6.23 of 100
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a                12.6692  ± 450.241
b               0.797397  ± 30.8091
(intercept)     -27.9273
method ssp
ridge λ = 0.5 (on the scaled problem)

reg/adassp (regression)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 6.35 of 100
3 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a                0.24141  ± 0.585934
b              0.0115206  ± 0.0285248
c              -0.434587  ± 0.613267
(intercept)      2.94962
method adassp
ridge λ = 415.743 (on the scaled problem)

reg/ops (regression)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 6.88 of 100
1 feature; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a                1.97322  ± 3.48232
(intercept)      2.10215
method ops
ridge λ = 407.741 (on the scaled problem)

reg/adaops (regression)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 7.41 of 100
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a             -0.0471675  ± 0.384944
c              0.0128542  ± 0.386677
(intercept)       3.3334
method adaops
ridge λ = 1647.16 (on the scaled problem)

reg/pcls (regression)  2023-11-14 22:15:00–22:16:00 UTC  ok  ε spent 8.19 of 100
3 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a               0.205236  ± 0.78466
b                      0  not selected
c             -0.0754695  ± 0.761973
(intercept)       2.6425
method pcls
ridge λ = 266.183 (on the scaled problem)

reg/ssp (regression)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 8.29 of 100
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a                1.27258  ± 28.4447
b               0.227319  ± 1.4874
(intercept)     -8.93163
method ssp
ridge λ = 0.5 (on the scaled problem)

reg/adassp (regression)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 8.39 of 100
3 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.103337  ± 0.781764
b             0.00804628  ± 0.0255948
c               0.171956  ± 0.619114
(intercept)      2.69168
method adassp
ridge λ = 415.743 (on the scaled problem)

reg/ops (regression)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 8.92 of 100
1 feature; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a             -0.0921724  ± 3.56607
(intercept)     -10.8303
method ops
ridge λ = 407.741 (on the scaled problem)

reg/adaops (regression)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 9.45 of 100
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a             -0.0195342  ± 0.34577
c               0.102291  ± 0.345833
(intercept)      2.89805
method adaops
ridge λ = 1647.16 (on the scaled problem)

reg/pcls (regression)  2023-11-14 22:16:00–22:17:00 UTC  ok  ε spent 10.1 of 100
3 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.486521  ± 0.885447
b              0.0184402  ± 0.0371312
c                      0  not selected
(intercept)      2.16348
method pcls
ridge λ = 266.183 (on the scaled problem)

reg/ssp (regression)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 10.2 of 100
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a               -2.80778  ± 10.9796
b             -0.0121318  ± 0.208925
(intercept)        4.531
method ssp
ridge λ = 0.5 (on the scaled problem)

reg/adassp (regression)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 10.3 of 100
3 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.374303  ± 0.607821
b            -0.00125977  ± 0.0273181
c              0.0448175  ± 0.728003
(intercept)      3.51983
method adassp
ridge λ = 415.743 (on the scaled problem)

reg/ops (regression)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 10.8 of 100
1 feature; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.875278  ± 4.99462
(intercept)    -0.704405
method ops
ridge λ = 407.741 (on the scaled problem)

reg/adaops (regression)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 11.4 of 100
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              0.0266172  ± 0.311612
c               0.034724  ± 0.312973
(intercept)      3.49217
method adaops
ridge λ = 1647.16 (on the scaled problem)

reg/pcls (regression)  2023-11-14 22:17:00–22:18:00 UTC  ok  ε spent 12 of 100
3 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a             -0.0270531  ± 0.778894
b             0.00877198  ± 0.0330766
c                      0  not selected
(intercept)      2.65835
method pcls
ridge λ = 266.183 (on the scaled problem)

reg/ssp (regression)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 12.1 of 100
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a               0.172723  ± 4.53142
b              0.0483241  ± 0.179913
(intercept)      1.39798
method ssp
ridge λ = 0.5 (on the scaled problem)

reg/adassp (regression)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 12.2 of 100
3 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a               0.468818  ± 0.730884
b            0.000724335  ± 0.0230439
c              0.0919405  ± 0.595163
(intercept)      2.86147
method adassp
ridge λ = 415.743 (on the scaled problem)

reg/ops (regression)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 12.7 of 100
1 feature; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a                4.51933  ± 4.02394
(intercept)     -4.94996
method ops
ridge λ = 407.741 (on the scaled problem)

reg/adaops (regression)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 13.2 of 100
2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a              -0.134538  ± 0.332635
c            -0.00614814  ± 0.333494
(intercept)      3.24693
method adaops
ridge λ = 1647.16 (on the scaled problem)

reg/pcls (regression)  2023-11-14 22:18:00–22:19:00 UTC  ok  ε spent 13.8 of 100
3 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)
feature      coefficient  ± 1.96·SE
a                      0  not selected
b              0.0194283  ± 0.0380389
c               0.028201  ± 0.75765
(intercept)      1.38848
method pcls
ridge λ = 266.183 (on the scaled problem)

