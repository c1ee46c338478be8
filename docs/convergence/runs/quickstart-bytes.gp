set terminal pngcairo size 960,640 enhanced font 'sans,11'
set output '/work/main/docs/convergence/runs/quickstart-bytes.png'
set title "examples/quickstart.yaml: test accuracy against MB pushed per worker (first seed's curves)" noenhanced
set xlabel 'MB pushed per worker (log scale)'
set ylabel 'test accuracy (%)'
set key bottom right
set grid
set logscale x
plot '/work/main/docs/convergence/runs/quickstart-bytes.dat' index 0 with linespoints lw 2 pt 7 ps 0.5 title 'dense: 1x, mean final 88.60% (3 seeds)' noenhanced, \
     '/work/main/docs/convergence/runs/quickstart-bytes.dat' index 1 with linespoints lw 2 pt 7 ps 0.5 title 'laco: 137x, mean final 88.33% (3 seeds)' noenhanced
