set terminal pngcairo size 960,640 enhanced font 'sans,11'
set output '/work/main/docs/convergence/runs/quickstart-iterations.png'
set title "examples/quickstart.yaml: test accuracy against iterations (first seed's curves)" noenhanced
set xlabel 'iteration'
set ylabel 'test accuracy (%)'
set key bottom right
set grid

plot '/work/main/docs/convergence/runs/quickstart-iterations.dat' index 0 with linespoints lw 2 pt 7 ps 0.5 title 'dense: 1x, mean final 88.60% (3 seeds)' noenhanced, \
     '/work/main/docs/convergence/runs/quickstart-iterations.dat' index 1 with linespoints lw 2 pt 7 ps 0.5 title 'laco: 137x, mean final 88.33% (3 seeds)' noenhanced
