set terminal pngcairo size 960,640 enhanced font 'sans,11'
set output 'docs/convergence/runs/lenet5-iterations.png'
set title "examples/lenet5.yaml: test accuracy against iterations (first seed's curves)" noenhanced
set xlabel 'iteration'
set ylabel 'test accuracy (%)'
set key bottom right
set grid

plot 'docs/convergence/runs/lenet5-iterations.dat' index 0 with linespoints lw 2 pt 7 ps 0.5 title 'dense: 1x, mean final 90.67% (3 seeds)' noenhanced, \
     'docs/convergence/runs/lenet5-iterations.dat' index 1 with linespoints lw 2 pt 7 ps 0.5 title 'graddrop: 110x, mean final 90.10% (3 seeds)' noenhanced, \
     'docs/convergence/runs/lenet5-iterations.dat' index 2 with linespoints lw 2 pt 7 ps 0.5 title 'laco: 113x, mean final 90.16% (3 seeds)' noenhanced, \
     'docs/convergence/runs/lenet5-iterations.dat' index 3 with linespoints lw 2 pt 7 ps 0.5 title 'laco-at-signsgd-bytes: 33x, mean final 90.48% (3 seeds)' noenhanced, \
     'docs/convergence/runs/lenet5-iterations.dat' index 4 with linespoints lw 2 pt 7 ps 0.5 title 'signsgd: 31x, mean final 90.57% (3 seeds)' noenhanced
