set terminal pngcairo size 960,640 enhanced font 'sans,11'
set output '/work/main/docs/convergence/runs/lenet5-bytes.png'
set title "examples/lenet5.yaml: test accuracy against MB pushed per worker (first seed's curves)" noenhanced
set xlabel 'MB pushed per worker (log scale)'
set ylabel 'test accuracy (%)'
set key bottom right
set grid
set logscale x
plot '/work/main/docs/convergence/runs/lenet5-bytes.dat' index 0 with linespoints lw 2 pt 7 ps 0.5 title 'dense: 1x, mean final 90.67% (3 seeds)' noenhanced, \
     '/work/main/docs/convergence/runs/lenet5-bytes.dat' index 1 with linespoints lw 2 pt 7 ps 0.5 title 'graddrop: 110x, mean final 90.10% (3 seeds)' noenhanced, \
     '/work/main/docs/convergence/runs/lenet5-bytes.dat' index 2 with linespoints lw 2 pt 7 ps 0.5 title 'laco: 116x, mean final 90.63% (3 seeds)' noenhanced, \
     '/work/main/docs/convergence/runs/lenet5-bytes.dat' index 3 with linespoints lw 2 pt 7 ps 0.5 title 'laco-at-signsgd-bytes: 31x, mean final 90.65% (3 seeds)' noenhanced, \
     '/work/main/docs/convergence/runs/lenet5-bytes.dat' index 4 with linespoints lw 2 pt 7 ps 0.5 title 'signsgd: 31x, mean final 90.53% (3 seeds)' noenhanced
